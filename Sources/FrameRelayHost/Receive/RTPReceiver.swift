@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRTP
import FrameRelayDecoding

/// A VP8 RTP receiver: follows one stream (``RTPHeader``), keeps its
/// payloads (``JitterBuffer``), takes its frames in decode order as the
/// subscriber does (``FrameTracker``: a frame whole before an earlier one
/// waits for it while NACK has its chance), asks for lost packets (NACK)
/// and, when a frame is lost for good, for a keyframe (PLI), decodes with libvpx, and
/// reads the frame number stamped into each picture. Once a second it
/// reports to the sender (``ReceptionStatistics``) and says it asks for what
/// it misses, so the sender can leave out periodic keyframes.
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
        public var receiverReportsSent: UInt64 = 0
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
        /// What each receiver report said, a second apart (the first hour's).
        public var reports: [ReportedSecond] = []
    }

    /// One receiver report's second: what came in, what was lost, and the
    /// delay-based estimate sent with it as a REMB (``DelayBasedEstimator``).
    public struct ReportedSecond: Sendable, Codable {
        /// Seconds since the stream's first packet.
        public var at: Double
        /// RTP received over the last second, kbit/s.
        public var kbps: Int
        /// The report block's fraction lost (0...1).
        public var fractionLost: Double
        /// The frames' mean queueing on the path, ms (nil: no frame began in the second).
        public var queueingMs: Double?
        /// The REMB sent, kbit/s (nil: none yet: no overuse seen).
        public var estimateKbps: Int?
    }

    public private(set) var stats = Stats()
    private let rtpSocket: Socket
    private let rtcpSocket: Socket
    /// Wakes the loop when either socket has input.
    private let input: EventPoll
    private let decoder: VP8Decoder
    private var jitter = JitterBuffer()
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    /// RTCP feedback (NACK, PLI, receiver reports) is written here.
    private let feedbackBuffer: UnsafeMutableRawPointer
    /// The packets missed, asked for once each (``MissingPackets/Rule/plainRTP``), and the list of those due.
    private var missing = MissingPackets(rule: .plainRTP)
    private var asking: [UInt16] = []
    /// The frames in decode order, and what it said on the last packet or tick.
    private var tracker = FrameTracker()
    private var events: [FrameTracker.Event] = []
    /// The decoder failed, or a keyframe was too large: nothing decodes until a keyframe does.
    private var decoderNeedsKeyframe = false
    /// The stream followed: the first SSRC heard, until it is silent for ``ssrcTimeout``.
    private var lockedSSRC: UInt32?
    private var lastFromLocked: UInt64 = 0
    /// When the followed stream's last packet came (CLOCK_MONOTONIC ns); nil before its first.
    public var lastPacketTime: UInt64? { lockedSSRC == nil ? nil : lastFromLocked }
    static let ssrcTimeout: UInt64 = 1_000_000_000
    /// The largest picture decoded (8K): a forged keyframe header cannot make the decoder allocate more.
    public static let maxPixels = 7680 * 4320
    private var lastPLI: UInt64 = 0
    private var reception: ReceptionStatistics?
    private var lastReport: UInt64 = 0
    /// What the path carries, from the packets' arrival (sent as a REMB with each report).
    private var estimator = DelayBasedEstimator()
    private var firstPacket: UInt64?
    static let reportInterval: UInt64 = 1_000_000_000
    /// Where feedback goes: the stream's own host, at the port its Sender Reports come from.
    private var sender: SocketAddress?
    /// Where the followed stream's RTP comes from, and where the packet being handled came from.
    private var streamSource = SocketAddress()
    private var packetSource = SocketAddress()
    /// Feedback may be a tenth of the RTP received, from a credit that
    /// fills with what comes in and holds at most ``feedbackBurst`` bytes
    /// (a receiver report, a PLI and a hundred NACKs): what a long stream
    /// left over cannot pay for a burst of feedback to a stream of gaps.
    static let feedbackShare = 10
    static let feedbackBurst = 2_048
    /// Feedback credit, in tenths of a byte.
    private var feedbackCredit = 0
    private let receiverSSRC = UInt32.random(in: 1...UInt32.max)
    /// Called with each decoded picture's frame number (nil when unreadable).
    public var onPicture: ((UInt64?, DecodedPicture) -> Void)?

    /// Binds `port` (RTP) and `port + 1` (RTCP) on `address`.
    public init(port: Int, address: String = "127.0.0.1") throws {
        guard (1...65534).contains(port) else { throw TransportError.invalidPort(port) }
        decoder = try VP8Decoder()
        rtpSocket = try Self.bind(port: port, address: address)
        rtcpSocket = try Self.bind(port: port + 1, address: address)
        input = try EventPoll()
        try input.add(rtpSocket.rawValue, tag: 0)
        try input.add(rtcpSocket.rawValue, tag: 1)
        receiveBuffer = .allocate(byteCount: JitterBuffer.payloadBytes, alignment: 16)
        feedbackBuffer = .allocate(byteCount: 1500, alignment: 16)
    }

    deinit {
        receiveBuffer.deallocate()
        feedbackBuffer.deallocate()
    }

    private static func bind(port: Int, address: String) throws(SystemError) -> Socket {
        guard let local = SocketAddress(ipv4: address, port: port) else { throw SystemError("inet_pton", address, code: .invalidArgument) }
        let socket = try Socket(family: AF_INET, type: SOCK_DGRAM, nonBlocking: true)
        // Room for bursts of unpaced senders (a keyframe at once).
        socket.setReceiveBuffer(4 << 20)
        do {
            try socket.bind(to: local)
        } catch {
            throw SystemError("bind", "\(address):\(port)", code: error.code)
        }
        return socket
    }

    /// Receives until `deadline` (CLOCK_MONOTONIC ns) or `shouldStop`.
    public func run(until deadline: UInt64, shouldStop: () -> Bool = { false }) {
        while MonotonicClock.now() < deadline, !shouldStop() {
            // Either socket ready or 20 ms gone: both are drained (non-blocking) and the report clock checked.
            try? input.wait(milliseconds: 20) { _ in }
            drainRTCP()
            drainRTP()
            let now = MonotonicClock.now()
            tick(now: now)
            if now &- lastReport >= Self.reportInterval { sendReport(now: now) }
        }
    }

    private func drainRTCP() {
        var from = SocketAddress()
        while let count = try? rtcpSocket.receive(into: receiveBuffer, from: &from), count > 0 {
            // Feedback goes where the followed stream's Sender Reports come
            // from, and only when they come from the host its RTP comes from:
            // anyone can forge an SSRC, and a report from elsewhere would
            // turn this receiver's NACKs on a third party.
            if count >= 28, receiveBuffer[1] == RTCP.senderReport,
                let locked = lockedSSRC, UInt32(bigEndian: receiveBuffer.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) == locked
            {
                guard from.sameHost(as: streamSource) else {
                    stats.senderReportsRefused += 1
                    continue
                }
                stats.senderReports += 1
                sender = from
                reception?.senderReport(ntp: UInt64(bigEndian: receiveBuffer.loadUnaligned(fromByteOffset: 8, as: UInt64.self)), arrival: MonotonicClock.now())
            }
        }
    }

    private func drainRTP() {
        while let count = try? rtpSocket.receive(into: receiveBuffer, from: &packetSource) {
            // The smallest VP8 packet is 14 bytes (header, a one-byte descriptor, one byte):
            // GStreamer's packetizer sends such tails. receive(_:) checks each packet's length.
            if count >= 12 { receive(UnsafeRawBufferPointer(rebasing: receiveBuffer[..<count])) }
        }
    }

    func receive(_ packet: UnsafeRawBufferPointer) {
        guard let header = RTPHeader(parsing: packet) else { return }
        stats.packets += 1
        guard header.payloadOffset < packet.count else { return }
        let now = MonotonicClock.now()
        if header.ssrc != lockedSSRC {
            // Another sender: ignored while ours is heard; followed once ours is silent (a restarted host).
            if lockedSSRC != nil, now &- lastFromLocked < Self.ssrcTimeout {
                stats.foreignPackets += 1
                return
            }
            lockedSSRC = header.ssrc
            reception = ReceptionStatistics(first: header.sequence)
            missing = MissingPackets(rule: .plainRTP)
            tracker = FrameTracker()
            decoderNeedsKeyframe = false
            jitter.removeAll()
            estimator = DelayBasedEstimator()
        }
        lastFromLocked = now
        if firstPacket == nil { firstPacket = now }
        reception?.record(sequence: header.sequence, timestamp: header.timestamp, arrival: now)
        estimator.packet(timestamp: header.timestamp, size: packet.count, arrival: now)
        stats.ssrc = header.ssrc
        stats.bytesReceived &+= UInt64(packet.count)
        feedbackCredit = min(Self.feedbackBurst * Self.feedbackShare, feedbackCredit + packet.count)
        streamSource = packetSource
        let payload = UnsafeRawBufferPointer(rebasing: packet[header.payloadOffset...])
        guard jitter.insert(payload, sequence: header.sequence, timestamp: header.timestamp, marker: header.marker) else { return }
        // A gap before this packet: ask for what is missing, once, in one NACK.
        missing.received(header.sequence, retransmitted: false, now: now)
        asking.removeAll(keepingCapacity: true)
        missing.due(now: now, into: &asking)
        if !asking.isEmpty {
            let length = RTCP.writeNACK(into: feedbackBuffer, sender: receiverSSRC, media: stats.ssrc, sequences: asking)
            if sendFeedback(length) { stats.nacksSent += 1 }
        }
        events.removeAll(keepingCapacity: true)
        tracker.insert(sequence: header.sequence, timestamp: header.timestamp, marker: header.marker, payload: payload, now: now, into: &events)
        handleEvents(now: now)
    }

    /// Gives up on a frame NACK did not bring in time: four round trips
    /// from a NACK to its packet, at least 150 ms (the subscriber's patience).
    private func tick(now: UInt64) {
        events.removeAll(keepingCapacity: true)
        tracker.tick(now: now, patience: max(150_000_000, 4 * (missing.roundTrip ?? 50_000_000)), into: &events)
        handleEvents(now: now)
    }

    /// Decodes the frames the tracker made decodable; asks for a keyframe
    /// when a frame was given up on, or came whole while one is waited for.
    private func handleEvents(now: UInt64) {
        var gaveUp = false
        for event in events {
            switch event {
            case .decodable(let frame, _): decode(frame)
            case .keyframeWait: gaveUp = true
            }
        }
        let counts = tracker.counts
        let completed = counts.framesComplete > stats.framesComplete
        stats.framesComplete = counts.framesComplete
        stats.framesLost = counts.framesSkipped
        if gaveUp || (completed && (tracker.awaitingKeyframe || decoderNeedsKeyframe)) { sendPLI(now: now) }
    }

    /// Decodes one frame the tracker handed out, in decode order.
    private func decode(_ decodable: FrameTracker.Frame) {
        guard let whole = jitter.wholeFrame(containing: decodable.firstSequence) else { return }
        let frame = jitter.assemble(whole)
        let key = VP8Decoder.isKeyframe(frame)
        if let size = VP8Decoder.keyframeSize(frame), size.width * size.height > Self.maxPixels {
            stats.framesTooLarge += 1
            decoderNeedsKeyframe = true
            return
        }
        if key {
            stats.keyframes += 1
            decoderNeedsKeyframe = false
        }
        guard !decoderNeedsKeyframe else { return }
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
            decoderNeedsKeyframe = true
        }
    }

    /// A Receiver Report about the followed stream and the APP packet that
    /// says this receiver asks for repairs, as one compound packet, within
    /// the feedback budget like all feedback: a stream of a few hundred bytes
    /// a second (a still screen's idle repeats) still carries one every few
    /// seconds, inside the 5 s a sender keeps the promise.
    private func sendReport(now: UInt64) {
        guard sender != nil, reception != nil else { return }
        lastReport = now
        let estimate = estimator.report(now: now)
        let length = 48 + (estimate == nil ? 0 : 24)
        // Withheld, the report is not computed: the next one's fraction lost covers both seconds.
        guard feedbackCredit >= length * Self.feedbackShare else {
            stats.feedbackWithheld += 1
            return
        }
        let block = reception!.block(now: now)
        var written = RTCP.writeReceiverReport(into: feedbackBuffer, sender: receiverSSRC, media: stats.ssrc, block: block)
        written += RTCP.writeAsksForRepair(into: feedbackBuffer + written, sender: receiverSSRC, media: stats.ssrc)
        if let estimate { written += RTCP.writeREMB(into: feedbackBuffer + written, sender: receiverSSRC, bitrate: UInt64(estimate), media: [stats.ssrc]) }
        precondition(written == length)
        if sendFeedback(length) { stats.receiverReportsSent += 1 }
        if stats.reports.count < 3600 {
            stats.reports.append(ReportedSecond(at: Double(now &- (firstPacket ?? now)) / 1e9, kbps: estimator.receivedRate / 1000,
                                                fractionLost: Double(block.fractionLost) / 256, queueingMs: estimator.queueing.map { Double($0) / 1e6 },
                                                estimateKbps: estimate.map { $0 / 1000 }))
        }
    }

    private func sendPLI(now: UInt64) {
        guard now &- lastPLI > 200_000_000 else { return }
        lastPLI = now
        let length = RTCP.writePLI(into: feedbackBuffer, sender: receiverSSRC, media: stats.ssrc)
        if sendFeedback(length) { stats.plisSent += 1 }
    }

    /// Sends the feedback written in ``feedbackBuffer`` to the sender's RTCP
    /// address (learned from its Sender Reports), within the feedback budget.
    private func sendFeedback(_ length: Int) -> Bool {
        guard let sender else { return false }
        guard withinBudget(length) else {
            stats.feedbackWithheld += 1
            return false
        }
        stats.feedbackBytes += UInt64(length)
        return (try? rtcpSocket.send(UnsafeRawBufferPointer(start: feedbackBuffer, count: length), to: sender)) == length
    }

    /// Takes `length` bytes of feedback from the credit, if it holds them.
    private func withinBudget(_ length: Int) -> Bool {
        guard feedbackCredit >= length * Self.feedbackShare else { return false }
        feedbackCredit -= length * Self.feedbackShare
        return true
    }
}
