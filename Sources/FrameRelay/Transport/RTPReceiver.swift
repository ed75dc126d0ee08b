@preconcurrency import Glibc

/// A VP8 RTP receiver: reassembles frames (RFC 7741), asks for lost packets
/// (NACK) and, when a frame is lost for good, for a keyframe (PLI), decodes
/// with libvpx, and reads the frame number stamped into each picture.
public final class RTPReceiver {
    public struct Stats: Sendable, Codable {
        public var packets: UInt64 = 0
        public var framesComplete: UInt64 = 0
        public var framesDecoded: UInt64 = 0
        public var framesLost: UInt64 = 0
        public var keyframes: UInt64 = 0
        public var decodeErrors: UInt64 = 0
        /// Keyframes larger than ``RTPReceiver/maxPixels``, not decoded.
        public var framesTooLarge: UInt64 = 0
        /// Packets from another SSRC while the stream's own kept coming.
        public var foreignPackets: UInt64 = 0
        public var nacksSent: UInt64 = 0
        public var plisSent: UInt64 = 0
        /// Bytes of RTP received and of RTCP feedback sent: feedback stays under a tenth of what came in.
        public var bytesReceived: UInt64 = 0
        public var feedbackBytes: UInt64 = 0
        /// Feedback not sent because the budget was spent (a forged stream of gaps).
        public var feedbackWithheld: UInt64 = 0
        public var senderReports: UInt64 = 0
        /// Sender Reports with the stream's SSRC from another host than the stream's own.
        public var senderReportsRefused: UInt64 = 0
        public var stampsRead: UInt64 = 0
        public var stampsOutOfOrder: UInt64 = 0
        public var firstStamp: UInt64?
        public var lastStamp: UInt64?
        public var width = 0
        public var height = 0
        public var ssrc: UInt32 = 0
    }

    public private(set) var stats = Stats()
    private let rtpSocket: Int32
    private let rtcpSocket: Int32
    private let decoder: VP8Decoder
    private static let slots = 1024
    private static let slotBytes = 1600
    private let packetStore: UnsafeMutableRawPointer
    private var present = [Bool](repeating: false, count: slots)
    private var sequences = [UInt16](repeating: 0, count: slots)
    private var lengths = [Int](repeating: 0, count: slots)
    private var timestamps = [UInt32](repeating: 0, count: slots)
    private var nackedAt = [UInt64](repeating: 0, count: slots)
    private var markers = [Bool](repeating: false, count: slots)
    private let receiveBuffer: UnsafeMutableRawPointer
    private let frameBuffer: UnsafeMutableRawPointer
    private let frameCapacity = 4 << 20
    private var highest: UInt16?
    private var lastCompletedTimestamp: UInt32?
    private var needKeyframe = true
    /// The stream followed: the first SSRC heard, until it is silent for ``ssrcTimeout``.
    private var lockedSSRC: UInt32?
    private var lastFromLocked: UInt64 = 0
    /// When the followed stream's last packet came (CLOCK_MONOTONIC ns); nil before its first.
    public var lastPacketTime: UInt64? { lockedSSRC == nil ? nil : lastFromLocked }
    static let ssrcTimeout: UInt64 = 1_000_000_000
    /// The largest picture decoded (8K): a forged keyframe header cannot make the decoder allocate more.
    public static let maxPixels = 7680 * 4320
    private var lastPLI: UInt64 = 0
    /// Where feedback goes: the stream's own host, at the port its Sender Reports come from.
    private var sender = sockaddr_storage()
    private var senderLength: socklen_t = 0
    /// Where the followed stream's RTP comes from, and where the packet being handled came from.
    private var streamSource = sockaddr_storage()
    private var packetSource = sockaddr_storage()
    /// Feedback bytes allowed per byte of RTP received.
    static let feedbackBudget: UInt64 = 10
    private let receiverSSRC = UInt32.random(in: 1...UInt32.max)
    /// Called with each decoded picture's frame number (nil when unreadable).
    public var onPicture: ((UInt64?, DecodedPicture) -> Void)?

    /// Binds `port` (RTP) and `port + 1` (RTCP) on `address`.
    public init(port: Int, address: String = "127.0.0.1") throws {
        guard (1...65534).contains(port) else { throw UsageError("invalid port \(port): must be 1...65534") }
        decoder = try VP8Decoder()
        rtpSocket = try Self.bind(port: port, address: address)
        do {
            rtcpSocket = try Self.bind(port: port + 1, address: address)
        } catch {
            close(rtpSocket)
            throw error
        }
        packetStore = .allocate(byteCount: Self.slots * Self.slotBytes, alignment: 16)
        receiveBuffer = .allocate(byteCount: Self.slotBytes, alignment: 16)
        frameBuffer = .allocate(byteCount: frameCapacity, alignment: 16)
    }

    deinit {
        close(rtpSocket)
        close(rtcpSocket)
        packetStore.deallocate()
        receiveBuffer.deallocate()
        frameBuffer.deallocate()
    }

    private static func bind(port: Int, address: String) throws -> Int32 {
        let fd = try valueOrErrno("socket", "udp") { socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        // Room for bursts of unpaced senders (a keyframe at once): past the
        // rmem_max cap where allowed (CAP_NET_ADMIN), else up to it.
        var size: Int32 = 4 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, 4) != 0 { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, address, &local.sin_addr) == 1 else {
            close(fd)
            throw SystemError("inet_pton", address, code: EINVAL)
        }
        let result = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw SystemError("bind", "\(address):\(port)", code: code)
        }
        return fd
    }

    /// Receives until `deadline` (CLOCK_MONOTONIC ns) or `shouldStop`.
    public func run(until deadline: UInt64, shouldStop: () -> Bool = { false }) {
        var fds = [pollfd(fd: rtpSocket, events: Int16(POLLIN), revents: 0), pollfd(fd: rtcpSocket, events: Int16(POLLIN), revents: 0)]
        while MonotonicClock.now() < deadline, !shouldStop() {
            _ = poll(&fds, 2, 20)
            drainRTCP()
            drainRTP()
        }
    }

    private func drainRTCP() {
        while true {
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(rtcpSocket, frameBuffer, 1500, 0, $0, &length) }
            }
            guard count > 0 else { return }
            // Feedback goes where the followed stream's Sender Reports come
            // from, and only when they come from the host its RTP comes from:
            // anyone can forge an SSRC, and a report from elsewhere would
            // turn this receiver's NACKs on a third party.
            if count >= 28, frameBuffer.load(fromByteOffset: 1, as: UInt8.self) == RTCP.senderReport,
                let locked = lockedSSRC, UInt32(bigEndian: frameBuffer.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) == locked
            {
                guard SocketAddress.sameHost(from, streamSource) else {
                    stats.senderReportsRefused += 1
                    continue
                }
                stats.senderReports += 1
                sender = from
                senderLength = length
            }
        }
    }

    private func drainRTP() {
        while true {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &packetSource) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(rtpSocket, receiveBuffer, Self.slotBytes, 0, $0, &length) }
            }
            guard count >= 0 else { return }  // drained
            // The smallest VP8 packet is 14 bytes (header, a one-byte descriptor, one byte):
            // GStreamer's packetizer sends such tails. receive(_:) checks each packet's length.
            if count >= 12 { receive(UnsafeRawBufferPointer(start: receiveBuffer, count: count)) }
        }
    }

    func receive(_ packet: UnsafeRawBufferPointer) {
        guard packet[0] >> 6 == 2 else { return }
        stats.packets += 1
        let csrcs = Int(packet[0] & 0x0F)
        var offset = 12 + 4 * csrcs
        if packet[0] & 0x10 != 0, offset + 4 <= packet.count {
            offset += 4 + 4 * (Int(packet[offset + 2]) << 8 | Int(packet[offset + 3]))
        }
        guard offset < packet.count else { return }
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        let timestamp = UInt32(packet[4]) << 24 | UInt32(packet[5]) << 16 | UInt32(packet[6]) << 8 | UInt32(packet[7])
        let ssrc = UInt32(packet[8]) << 24 | UInt32(packet[9]) << 16 | UInt32(packet[10]) << 8 | UInt32(packet[11])
        let now = MonotonicClock.now()
        if ssrc != lockedSSRC {
            // Another sender: ignored while ours is heard; followed once ours is silent (a restarted host).
            if lockedSSRC != nil, now &- lastFromLocked < Self.ssrcTimeout {
                stats.foreignPackets += 1
                return
            }
            lockedSSRC = ssrc
            highest = nil
            lastCompletedTimestamp = nil
            needKeyframe = true
            for slot in 0..<Self.slots { present[slot] = false }
        }
        lastFromLocked = now
        stats.ssrc = ssrc
        stats.bytesReceived &+= UInt64(packet.count)
        streamSource = packetSource
        if let last = lastCompletedTimestamp, Int32(bitPattern: timestamp &- last) <= 0 { return }  // late or resent after completion
        let slot = Int(sequence) % Self.slots
        let length = packet.count - offset
        guard length <= Self.slotBytes else { return }
        (packetStore + slot * Self.slotBytes).copyMemory(from: packet.baseAddress! + offset, byteCount: length)
        present[slot] = true
        sequences[slot] = sequence
        lengths[slot] = length
        timestamps[slot] = timestamp
        markers[slot] = packet[1] & 0x80 != 0
        // A gap before this packet: ask for what is missing, once.
        if let highest {
            let ahead = Int16(bitPattern: sequence &- highest)
            if ahead > 1 && ahead <= 64 {
                for missing in 1..<Int(ahead) { requestResend(highest &+ UInt16(missing), now: now) }
            }
            if ahead > 0 { self.highest = sequence }
        } else {
            highest = sequence
        }
        tryComplete(timestamp: timestamp)
    }

    /// Assembles and decodes the frame with this timestamp if all its packets are here.
    private func tryComplete(timestamp: UInt32) {
        var start: UInt16?
        for slot in 0..<Self.slots where present[slot] && timestamps[slot] == timestamp {
            let descriptor = (packetStore + slot * Self.slotBytes).load(as: UInt8.self)
            if descriptor & 0x10 != 0, descriptor & 0x07 == 0 { start = sequences[slot] }
        }
        guard let first = start else { return }
        // Walk from the start packet to the marker, every packet present.
        var sequence = first
        var size = 0
        var walked = 0
        while true {
            let slot = Int(sequence) % Self.slots
            guard walked < Self.slots, present[slot], sequences[slot] == sequence, timestamps[slot] == timestamp else { return }
            let payload = packetStore + slot * Self.slotBytes
            let skip = Self.descriptorLength(UnsafeRawBufferPointer(start: payload, count: lengths[slot]))
            let bytes = lengths[slot] - skip
            guard skip > 0, size + bytes <= frameCapacity else { return }
            (frameBuffer + size).copyMemory(from: payload + skip, byteCount: bytes)
            size += bytes
            walked += 1
            if markers[slot] { break }
            sequence &+= 1
        }
        complete(timestamp: timestamp, first: first, count: walked, size: size)
    }

    private func complete(timestamp: UInt32, first: UInt16, count: Int, size: Int) {
        for index in 0..<count { present[Int(first &+ UInt16(index)) % Self.slots] = false }
        if let last = lastCompletedTimestamp, timestamp &- last > 0 {
            // Frames between the last completed and this one that never completed are lost.
            var lost = false
            for slot in 0..<Self.slots where present[slot] {
                let age = Int32(bitPattern: timestamp &- timestamps[slot])
                if age > 0 { present[slot] = false; lost = true }
            }
            if lost {
                stats.framesLost += 1
                needKeyframe = true
            }
        }
        lastCompletedTimestamp = timestamp
        stats.framesComplete += 1
        let frame = UnsafeRawBufferPointer(start: frameBuffer, count: size)
        let key = VP8Decoder.isKeyframe(frame)
        if let size = VP8Decoder.keyframeSize(frame), size.width * size.height > Self.maxPixels {
            stats.framesTooLarge += 1
            needKeyframe = true
            return
        }
        if key {
            stats.keyframes += 1
            needKeyframe = false
        }
        if needKeyframe {
            sendPLI(now: MonotonicClock.now())
            return
        }
        let ok = decoder.decode(frame) { picture in
            stats.framesDecoded += 1
            stats.width = picture.width
            stats.height = picture.height
            let number = FrameStamp.read(luma: picture.luma, stride: picture.lumaStride, width: picture.width, height: picture.height)
            if let number {
                stats.stampsRead += 1
                if let last = stats.lastStamp, number <= last { stats.stampsOutOfOrder += 1 }
                if stats.firstStamp == nil { stats.firstStamp = number }
                stats.lastStamp = number
            }
            onPicture?(number, picture)
        }
        if !ok {
            stats.decodeErrors += 1
            needKeyframe = true
        }
    }

    /// Bytes of the VP8 payload descriptor at the start of `payload`.
    static func descriptorLength(_ payload: UnsafeRawBufferPointer) -> Int {
        guard payload.count >= 1 else { return 0 }
        var length = 1
        if payload[0] & 0x80 != 0 {
            guard payload.count >= 2 else { return 0 }
            let extensions = payload[1]
            length = 2
            if extensions & 0x80 != 0 {
                guard payload.count > length else { return 0 }
                length += payload[length] & 0x80 != 0 ? 2 : 1
            }
            if extensions & 0x40 != 0 { length += 1 }
            if extensions & 0x30 != 0 { length += 1 }
        }
        return length <= payload.count ? length : 0
    }

    private func requestResend(_ sequence: UInt16, now: UInt64) {
        let slot = Int(sequence) % Self.slots
        guard now &- nackedAt[slot] > 20_000_000 else { return }
        nackedAt[slot] = now
        var packet = [UInt8](repeating: 0, count: 16)
        packet[0] = 0x81
        packet[1] = RTCP.transportFeedback
        packet[3] = 3
        put(&packet, 4, receiverSSRC)
        put(&packet, 8, stats.ssrc)
        packet[12] = UInt8(sequence >> 8)
        packet[13] = UInt8(sequence & 0xFF)
        if sendFeedback(packet) { stats.nacksSent += 1 }
    }

    private func sendPLI(now: UInt64) {
        guard now &- lastPLI > 200_000_000 else { return }
        lastPLI = now
        var packet = [UInt8](repeating: 0, count: 12)
        packet[0] = 0x81
        packet[1] = RTCP.payloadFeedback
        packet[3] = 2
        put(&packet, 4, receiverSSRC)
        put(&packet, 8, stats.ssrc)
        if sendFeedback(packet) { stats.plisSent += 1 }
    }

    private func put(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
        bytes[at] = UInt8(value >> 24)
        bytes[at + 1] = UInt8((value >> 16) & 0xFF)
        bytes[at + 2] = UInt8((value >> 8) & 0xFF)
        bytes[at + 3] = UInt8(value & 0xFF)
    }

    /// Sends RTCP to the sender's RTCP address (learned from its Sender Reports).
    private func sendFeedback(_ packet: [UInt8]) -> Bool {
        guard senderLength > 0 else { return false }
        guard (stats.feedbackBytes + UInt64(packet.count)) * Self.feedbackBudget <= stats.bytesReceived else {
            stats.feedbackWithheld += 1
            return false
        }
        stats.feedbackBytes += UInt64(packet.count)
        var address = sender
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(rtcpSocket, packet, packet.count, 0, $0, senderLength) }
        }
        return sent == packet.count
    }
}
