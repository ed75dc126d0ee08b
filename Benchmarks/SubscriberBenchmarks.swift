@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRTP
import FrameRelaySubscriber
import FrameRelayTools

/// What one native WebRTC viewer costs per packet of a 720p15 stream at
/// 1.5 Mbit/s (load-test's defaults): a datagram taken from a loopback
/// socket, SRTP (AES-GCM, as Janus agrees with it) removed, and the packet
/// followed into frames without decoding — against the floor, the same
/// datagrams only taken from the socket. Measured side by side, round by
/// round in one run: the ratio is the gate's.
func subscriberBenchmarks(quick: Bool) throws -> [BenchmarkResult] {
    let frameRate = 15, bitrate = 1_500_000
    let frameCount = quick ? 150 : 600
    // One key each way, as DTLS would give them: the sender's local is the viewer's remote.
    let key = (0..<28).map { UInt8($0 * 7 + 1) }, other = (0..<28).map { UInt8($0 * 5 + 3) }
    let sender = try SRTPSession(keys: SRTPKeys(profile: .aeadAES128GCM, local: key, remote: other))
    var generator = SystemRandomNumberGenerator()
    // The stream's packets, protected once: frames around the bitrate's mean, a keyframe every 4 s.
    var packetizer = RTPPacketizer(ssrc: 0x1234_5678, maxPacketSize: 1200)
    var packets: [[UInt8]] = []
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1300, alignment: 16)
    defer { scratch.deallocate() }
    for frame in 0..<frameCount {
        let keyframe = frame % (4 * frameRate) == 0
        let mean = bitrate / 8 / frameRate
        var bytes = (0..<(keyframe ? mean * 4 : mean / 2 + Int.random(in: 0...mean, using: &generator))).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[0] = keyframe ? 0x00 : 0x01  // the VP8 payload header's P bit
        bytes.withUnsafeBytes { frameBytes in
            packetizer.packetize(frameBytes, timestamp: UInt32(frame * 90_000 / frameRate), scratch: scratch) { packet, _ in
                (scratch + packet.count).initializeMemory(as: UInt8.self, repeating: 0, count: 16)
                let length = sender.protectRTP(scratch, length: packet.count)!
                packets.append(Array(UnsafeRawBufferPointer(start: scratch, count: length)))
            }
        }
    }
    // Loopback: the benchmark sends each frame's packets, then takes them as a viewer would.
    let receiver = try Socket(family: AF_INET, type: SOCK_DGRAM, nonBlocking: true)
    receiver.setReceiveBuffer(4 << 20)
    try receiver.bind(to: SocketAddress(ipv4: "127.0.0.1", port: 0)!)
    let address = try receiver.localAddress()
    let outgoing = try Socket(family: AF_INET, type: SOCK_DGRAM)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { buffer.deallocate() }
    var source = SocketAddress()

    /// Sends every packet (a frame's worth at a time) and takes each back, timing only the taking.
    func round(_ take: (UnsafeMutableRawBufferPointer) -> Void) throws -> UInt64 {
        var spent: UInt64 = 0, index = 0
        while index < packets.count {
            let end = min(packets.count, index + 64)
            for packet in packets[index..<end] { _ = try packet.withUnsafeBytes { try outgoing.send($0, to: address) } }
            let start = MonotonicClock.now()
            var taken = index
            while taken < end {
                guard let count = try receiver.receive(into: buffer, from: &source) else { continue }
                take(UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]))
                taken += 1
            }
            spent += MonotonicClock.now() - start
            index = end
        }
        return spent
    }
    var viewer: [Double] = [], floor: [Double] = []
    for roundNumber in 0..<(quick ? 4 : 10) {
        let inbound = try SRTPSession(keys: SRTPKeys(profile: .aeadAES128GCM, local: other, remote: key))
        let stream = try StreamFollower(payloadType: 96, retransmissionPayloadType: nil, decodes: false, expectedFrames: frameCount + 16)
        let followed = try round { datagram in
            if let length = inbound.unprotectRTP(datagram) { stream.receive(UnsafeRawBufferPointer(rebasing: datagram[..<length]), now: MonotonicClock.now()) }
        }
        let taken = try round { _ in }
        var stats = SubscriberStats()
        stream.fill(&stats, now: MonotonicClock.now())
        precondition(stats.framesDecodable == UInt64(frameCount) && stats.packetsLost == 0, "the benchmark's stream was not followed whole: \(stats)")
        if roundNumber > 0 {  // the first round warms the caches and the socket
            viewer.append(Double(followed) / Double(packets.count))
            floor.append(Double(taken) / Double(packets.count))
        }
    }
    viewer.sort()
    floor.sort()
    let perPacket = viewer[viewer.count / 2], recv = floor[floor.count / 2]
    let packetsPerSecond = Double(packets.count) / (Double(frameCount) / Double(frameRate))
    return [
        BenchmarkResult(name: "subscriber.720p15.cost_ratio_to_recv", unit: "x", value: perPacket / recv,
                        extra: String(format: "%.2f µs a packet against %.2f µs to take it from the socket, %.0f packets/s", perPacket / 1000, recv / 1000, packetsPerSecond)),
        BenchmarkResult(name: "subscriber.720p15.ms_per_viewer_second", unit: "ms", value: perPacket * packetsPerSecond / 1e6),
    ]
}
