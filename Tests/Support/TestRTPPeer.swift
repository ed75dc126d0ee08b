@preconcurrency import Glibc
import Foundation
import FrameRelaySystem

/// A minimal RTP/RTCP peer written for the tests, independent of our
/// receiver: it notes each frame's first packet (and whether it starts a
/// keyframe), parses Sender Reports, and sends PLI and FIR.
public final class TestRTPPeer {
    public struct FrameStart { public var timestamp: UInt32; public var keyframe: Bool; public var arrival: UInt64 }
    public struct SenderReport { public var ssrc: UInt32; public var ntpSeconds: UInt64; public var rtpTimestamp: UInt32; public var packets: UInt32; public var arrival: UInt64 }

    public let rtp: Int32
    public let rtcp: Int32
    public private(set) var frames: [FrameStart] = []
    public private(set) var packetCount = 0
    public private(set) var reports: [SenderReport] = []
    public private(set) var mediaSSRC: UInt32 = 0
    public private(set) var lastSequence: UInt16 = 0
    private var sender = sockaddr_in()
    private var firSequence: UInt8 = 0

    public init(port: Int) {
        rtp = Self.bind(port)
        rtcp = Self.bind(port + 1)
    }

    deinit {
        close(rtp)
        close(rtcp)
    }

    public static func bind(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var size: Int32 = 8 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4)
        let result = withLoopback(port) { Glibc.bind(fd, $0, $1) }
        precondition(result == 0, "bind \(port): errno \(errno)")
        return fd
    }

    /// Reads whatever arrives for `seconds`.
    public func pump(_ seconds: Double) { pump(until: { false }, timeout: seconds) }

    /// Reads whatever arrives until `done` holds (checked every 5 ms or so), or for `timeout` seconds.
    public func pump(until done: () -> Bool, timeout: Double) {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while MonotonicClock.now() < deadline, !done() {
            var fds = [pollfd(fd: rtp, events: Int16(POLLIN), revents: 0), pollfd(fd: rtcp, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, 5)
            while true {
                let n = recv(rtp, &buffer, buffer.count, 0)
                guard n >= 17 else { break }
                packetCount += 1
                lastSequence = UInt16(buffer[2]) << 8 | UInt16(buffer[3])
                mediaSSRC = UInt32(buffer[8]) << 24 | UInt32(buffer[9]) << 16 | UInt32(buffer[10]) << 8 | UInt32(buffer[11])
                let timestamp = UInt32(buffer[4]) << 24 | UInt32(buffer[5]) << 16 | UInt32(buffer[6]) << 8 | UInt32(buffer[7])
                let startOfFrame = buffer[12] & 0x10 != 0
                // Our descriptor is 4 bytes (X, I, 15-bit PictureID); the VP8 frame tag follows.
                if startOfFrame { frames.append(FrameStart(timestamp: timestamp, keyframe: buffer[16] & 1 == 0, arrival: MonotonicClock.now())) }
            }
            while true {
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = withUnsafeMutablePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(rtcp, &buffer, buffer.count, 0, $0, &length) } }
                guard n >= 28 else { break }
                if buffer[1] == 200 {
                    sender = from
                    func u32(_ at: Int) -> UInt32 { UInt32(buffer[at]) << 24 | UInt32(buffer[at + 1]) << 16 | UInt32(buffer[at + 2]) << 8 | UInt32(buffer[at + 3]) }
                    reports.append(SenderReport(ssrc: u32(4), ntpSeconds: UInt64(u32(8)), rtpTimestamp: u32(16), packets: u32(20), arrival: MonotonicClock.now()))
                }
            }
        }
    }

    private func send(_ packet: [UInt8]) {
        var address = sender
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(rtcp, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    /// Picture Loss Indication (RFC 4585, PT 206 FMT 1) for the stream heard, or for `media`.
    public func sendPLI(media: UInt32? = nil) { send([0x81, 206, 0, 2] + bigEndianBytes(0x1234_5678) + bigEndianBytes(media ?? mediaSSRC)) }

    /// A Generic NACK (RFC 4585, PT 205 FMT 1) as large as a packet gets:
    /// `entries` times "`first` and the 16 after it", 17 packets asked for
    /// `entries` times over.
    public func sendNACK(first: UInt16, entries: Int = 371) {
        let fci = (0..<entries).flatMap { _ in [UInt8(first >> 8), UInt8(first & 0xFF), 0xFF, 0xFF] }
        send([0x81, 205, UInt8((2 + entries) >> 8), UInt8((2 + entries) & 0xFF)] + bigEndianBytes(0x1234_5678) + bigEndianBytes(mediaSSRC) + fci)
    }

    /// Full Intra Request (RFC 5104, PT 206 FMT 4).
    public func sendFIR() {
        firSequence &+= 1
        send([0x84, 206, 0, 4] + bigEndianBytes(0x1234_5678) + bigEndianBytes(0) + bigEndianBytes(mediaSSRC) + [firSequence, 0, 0, 0])
    }
}

/// A 32-bit value in network byte order.
public func bigEndianBytes(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

/// An RTP packet as a sender makes it (version 2, payload type 96), `payload` after the header.
public func rtpPacket(ssrc: UInt32, sequence: UInt16, timestamp: UInt32, marker: Bool, payload: [UInt8]) -> [UInt8] {
    [0x80, (marker ? 0x80 : 0) | 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + bigEndianBytes(timestamp) + bigEndianBytes(ssrc) + payload
}

/// An even port pair unlikely to be in use: below Linux's ephemeral range
/// (32768 up), where the tests' own client sockets (curl, Chromium, the
/// viewer tests' connections) take their ports.
public func freePortPair() -> Int {
    20_000 + 2 * Int.random(in: 0..<6_000)
}

/// The local addresses (hex, as /proc/net/udp and udp6 write them) of UDP sockets bound to `port`.
public func udpLocalAddresses(port: Int) -> [String] {
    ["/proc/net/udp", "/proc/net/udp6"].flatMap { table in
        // After the heading, each line is "sl: ADDR:PORT REMOTE …" with the local port in hex.
        ((try? String(contentsOfFile: table, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst().compactMap { line -> String? in
            guard let local = line.split(separator: " ").dropFirst().first?.split(separator: ":"), local.count == 2,
                Int(local[1], radix: 16) == port
            else { return nil }
            return String(local[0])
        }
    }
}

/// Waits until some process has a UDP socket bound to `port` (a receiver we
/// spawned is ready once it has), at most `timeout` seconds.
public func waitUntilUDPPortIsBound(_ port: Int, timeout: Double = 15) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if !udpLocalAddresses(port: port).isEmpty { return true }
        usleep(20_000)
    }
    return false
}
