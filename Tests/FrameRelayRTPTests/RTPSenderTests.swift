import FrameRelayRTP
import Testing

/// The sending side of an RTP stream as a state machine (``RTPSender``),
/// driven with a clock of our own in nanoseconds and bytes in, no socket:
/// pacing, NACK answers, PLI and FIR, Sender Reports on their schedule, and
/// which destinations ask for what they miss.
@Suite struct RTPSenderTests {
    static let ssrc: UInt32 = 0xABCD_0123
    /// The wall clock the Sender Reports read.
    static let ntp: UInt64 = 0x1122_3344_5566_7788

    static func sender(destinations: Int = 1) -> RTPSender {
        var configuration = RTPSender.Configuration(ssrc: ssrc)
        configuration.destinations = destinations
        return RTPSender(configuration, sequence: 100, pictureID: 7, rtpBase: 1000, wallClock: { ntp })
    }

    /// A frame that fills `packets` packets of 1,200 bytes exactly.
    static func frame(packets: Int, fill: UInt8 = 0x5A) -> [UInt8] { [UInt8](repeating: fill, count: packets * (1200 - 16)) }

    /// What one poll at `now` hands out: each datagram's bytes and route; and the deadline it returns.
    static func poll(_ sender: inout RTPSender, at now: UInt64) -> (sent: [([UInt8], RTPSender.Route)], next: UInt64?) {
        var sent: [([UInt8], RTPSender.Route)] = []
        let next = sender.poll(now: now) { sent.append((Array($0), $1)) }
        return (sent, next)
    }

    static func sequence(_ packet: [UInt8]) -> UInt16 { UInt16(packet[2]) << 8 | UInt16(packet[3]) }

    /// A sender that adapts, with a 96 kbit/s target (12,000 bytes a second:
    /// ten packets) and a 20 kbit/s floor, once a keyframe of 20 packets
    /// (sequence numbers 100–119) has left; `drained`: when it had.
    static func adaptingAfterTwentyPackets(destinations: Int = 1, drained: inout UInt64) -> RTPSender {
        var configuration = RTPSender.Configuration(ssrc: ssrc)
        configuration.destinations = destinations
        configuration.targetBitrate = 96_000
        configuration.adapts = true
        configuration.floorBitrate = 20_000
        var sender = RTPSender(configuration, sequence: 100, pictureID: 7, rtpBase: 1000, wallClock: { ntp })
        frame(packets: 20).withUnsafeBytes { _ = sender.send($0, keyframe: true, captureTime: 0, now: 0) }
        var now: UInt64 = 0
        while sender.waitingBytes > 0, now < 1_000_000_000 { now = poll(&sender, at: now).next ?? now }
        drained = now
        return sender
    }

    /// A sender pacing at 1.2 MB/s (a 3.84 Mbit/s target, 2.5 times) with 10 ms of it at once: 10 packets of 1,200 bytes.
    static func paced() -> RTPSender {
        var configuration = RTPSender.Configuration(ssrc: ssrc)
        configuration.targetBitrate = 3_840_000
        configuration.burstInterval = 10_000_000
        return RTPSender(configuration, sequence: 100, pictureID: 7, rtpBase: 1000, wallClock: { ntp })
    }

    @Test func aFramesPacketsLeaveAtThePacingRateAfterABurst() {
        var sender = Self.paced()
        let start: UInt64 = 1_000_000
        let bytes = Self.frame(packets: 40)
        let sent = bytes.withUnsafeBytes { sender.send($0, keyframe: true, captureTime: start, now: start) }
        #expect(sent.pictureID == 7 && sent.through == 40)
        // A burst's worth at once (10 packets, 12,000 bytes), with the stream's first Sender Report;
        // then the bucket is empty, and the next packet is due the first nanosecond it holds anything.
        let first = Self.poll(&sender, at: start)
        #expect(first.sent.filter { $0.1 == .media }.map { Self.sequence($0.0) } == Array(100..<110))
        #expect(first.sent.filter { $0.1 == .control }.count == 1 && first.next == start + 1)
        // 5 ms later, 5 ms at 1.2 MB/s: 5 packets, and the bucket empty again.
        let later = Self.poll(&sender, at: start + 5_000_000)
        #expect(later.sent.map { Self.sequence($0.0) } == Array(110..<115) && later.next == start + 5_000_001)
        // One packet 1 ms after another once they go one by one.
        _ = Self.poll(&sender, at: start + 5_000_001)
        let due = sender.nextPacketDue
        #expect(due == start + 6_000_001)
        // A poll that comes a second late sends one burst, not the second's worth: the bucket holds 10 ms.
        let late = Self.poll(&sender, at: start + 1_000_000_000)
        #expect(late.sent.filter { $0.1 == .media }.map { Self.sequence($0.0) } == Array(116..<126))
        #expect(sender.released == 26)
        // Every packet: 1,200 bytes, PictureID 7, the frame's timestamp, the marker on the last only.
        _ = Self.poll(&sender, at: start + 2_000_000_000)
        _ = Self.poll(&sender, at: start + 3_000_000_000)
        #expect(sender.released == 40 && sender.nextPacketDue == nil && sender.waitingBytes == 0)
        let stats = sender.stats
        #expect(stats.frames == 1 && stats.keyframes == 1 && stats.packets == 40)
    }

    @Test func framesQueueInOrderAndEachSaysWhenItHasLeft() {
        var sender = Self.paced()
        let first = Self.frame(packets: 14).withUnsafeBytes { sender.send($0, keyframe: true, captureTime: 0, now: 0) }
        var media: [[UInt8]] = []
        media += Self.poll(&sender, at: 0).sent.filter { $0.1 == .media }.map(\.0)
        let second = Self.frame(packets: 2, fill: 1).withUnsafeBytes { sender.send($0, keyframe: false, captureTime: 1000, now: 1000) }
        #expect(first.through == 14 && second.through == 16 && sender.released == 10)
        for t in stride(from: UInt64(1_000_000), through: 10_000_000, by: 1_000_000) {
            media += Self.poll(&sender, at: t).sent.filter { $0.1 == .media }.map(\.0)
        }
        // The first frame's rest, then the second's: in sequence, the marker on each frame's last packet.
        #expect(media.map(Self.sequence) == Array(100..<116))
        #expect(media.indices.filter { media[$0][1] & 0x80 != 0 } == [13, 15])
        #expect(sender.released == 16)
    }

    @Test func aQueueTooLongForThePacingRateDrainsWithinHalfASecond() {
        var configuration = RTPSender.Configuration(ssrc: Self.ssrc)
        configuration.targetBitrate = 384_000  // 120,000 bytes/s: 400 packets would take 4 s
        var sender = RTPSender(configuration, sequence: 0, pictureID: 0, rtpBase: 0, wallClock: { Self.ntp })
        Self.frame(packets: 400).withUnsafeBytes { _ = sender.send($0, keyframe: true, captureTime: 0, now: 0) }
        var times: [UInt64] = []
        var now: UInt64 = 0
        while let due = sender.nextPacketDue, now < 2_000_000_000 {
            now = max(now, due)
            let count = Self.poll(&sender, at: now).sent.filter { $0.1 == .media }.count
            times += Array(repeating: now, count: count)
        }
        // 480,000 bytes in 500 ms: 960,000 bytes/s, a packet every 1.25 ms, after the first burst
        // (40 ms at the pacing rate the stream had before: 4,800 bytes, 4 packets).
        #expect(times.count == 400 && times.last! <= 500_000_000 && times.last! > 450_000_000, "\(times.last ?? 0)")
        #expect(times.prefix(4).allSatisfy { $0 == 0 } && times[4] > 0 && times[5] - times[4] == 1_250_000, "\(times.prefix(6))")
    }

    @Test func nacksAreAnsweredWithThePacketsOnceEveryHundredMilliseconds() {
        var sender = Self.sender()
        var sent: [UInt16: [UInt8]] = [:]
        for n in 0..<5 {
            Self.frame(packets: 1, fill: UInt8(n)).withUnsafeBytes { _ = sender.send($0, keyframe: n == 0, captureTime: UInt64(n) * 33_000_000, now: UInt64(n) * 33_000_000) }
            for (packet, route) in Self.poll(&sender, at: UInt64(n) * 33_000_000).sent where route == .media { sent[Self.sequence(packet)] = packet }
        }
        var nack = [UInt8](repeating: 0, count: 64)
        let length = nack.withUnsafeMutableBytes { RTCP.writeNACK(into: $0.baseAddress!, sender: 1, media: Self.ssrc, sequences: [101, 103]) }
        let now: UInt64 = 200_000_000
        let asked = nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [0], fromRTCPPortOf: [], now: now) }
        #expect(asked == RTPSender.Asked(keyframe: false, resends: 2))
        let resent = Self.poll(&sender, at: now).sent.filter { $0.1 == .repair(0) }.map(\.0)
        #expect(resent == [sent[101]!, sent[103]!])
        // Asked again 50 ms on: nothing (at most once per 100 ms a packet); 150 ms on: again.
        _ = nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [0], fromRTCPPortOf: [], now: now + 50_000_000) }
        #expect(Self.poll(&sender, at: now + 50_000_000).sent.filter { $0.1 == .repair(0) }.isEmpty)
        _ = nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [0], fromRTCPPortOf: [], now: now + 150_000_000) }
        #expect(Self.poll(&sender, at: now + 150_000_000).sent.filter { $0.1 == .repair(0) }.count == 2)
        // A NACK for another stream asks nothing of this one.
        let other = nack.withUnsafeMutableBytes { RTCP.writeNACK(into: $0.baseAddress!, sender: 1, media: 0x1234, sequences: [101]) }
        #expect(nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<other]), fromHostOf: [0], fromRTCPPortOf: [], now: now) }.resends == 0)
        // A NACK from no destination's host is no one's: nothing goes again.
        #expect(nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [], fromRTCPPortOf: [], now: now + 300_000_000) }.resends == 0)
        #expect(Self.poll(&sender, at: now + 300_000_000).sent.allSatisfy { $0.1 == .control })
        let stats = sender.stats
        #expect(stats.nacked == 6 && stats.retransmitted == 4)
    }

    /// A resend goes only to the destinations that asked for it, once to
    /// each however often it is asked, and each destination's resends take
    /// at most the target over a second, from a queue and a history budget
    /// of its own: one that asks for everything leaves another's answered.
    /// The encoder is given the target less what the most repaired
    /// destination took. (Sent to every destination, one receiver's NACKs
    /// doubled another's bitrate; with one queue, a flood left another's unanswered.)
    @Test func resendsGoOnlyToTheDestinationsThatAsked() {
        var drained: UInt64 = 0
        var sender = Self.adaptingAfterTwentyPackets(destinations: 3, drained: &drained)
        let second: UInt64 = 2_000_000_000
        var nack = [UInt8](repeating: 0, count: 64)
        func ask(_ sequences: [UInt16], host: [Int], port: [Int], at: UInt64) {
            let length = nack.withUnsafeMutableBytes { RTCP.writeNACK(into: $0.baseAddress!, sender: 1, media: Self.ssrc, sequences: sequences) }
            _ = nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: host, fromRTCPPortOf: port, now: at) }
        }
        // Destination 1 from its RTCP port, destination 2 from its host (with 0 on it too), 101 asked by both and twice by 1.
        ask([101, 102], host: [1], port: [1], at: second)
        ask([101], host: [1], port: [1], at: second)
        ask([101, 103], host: [0, 2], port: [], at: second)
        let sent = Self.poll(&sender, at: second).sent.compactMap { packet, route -> String? in
            guard case .repair(let to) = route else { return nil }
            return "\(Self.sequence(packet))>\(to)"
        }
        #expect(sent == ["101>0", "103>0", "101>1", "102>1", "101>2", "103>2"], "\(sent)")
        #expect(sender.stats.retransmitted == 6)
        // Destination 1 alone asks for ten more: it gets eight (its second's budget, 12,000 bytes, less the two it had), the others lose nothing.
        ask(Array(104..<114), host: [1], port: [1], at: second + 200_000_000)
        let more = Self.poll(&sender, at: second + 200_000_000).sent.filter { $0.1 == .repair(1) }.count
        #expect(more == 8, "\(more)")
        #expect(sender.encoderBitrate(now: second + 200_000_000) == 20_000, "destination 1 took the whole target: the floor")
        ask([114], host: [0], port: [0], at: second + 300_000_000)
        #expect(Self.poll(&sender, at: second + 300_000_000).sent.filter { $0.1 == .repair(0) }.count == 1, "destination 0 still has its own budget")
        #expect(sender.encoderBitrate(now: second + 1_300_000_000) == 96_000, "a second on, none count")
        // Destination 2 floods (every packet, over and over, filling its queue): destination 0's one ask is answered.
        for _ in 0..<60 { ask(Array(100..<120), host: [2], port: [2], at: second + 1_400_000_000) }
        ask([105], host: [0], port: [0], at: second + 1_400_000_000)
        let flood = Self.poll(&sender, at: second + 1_400_000_000).sent.filter { if case .repair = $0.1 { true } else { false } }.map { "\(Self.sequence($0.0))>\($0.1)" }
        #expect(flood.contains("105>repair(0)") && flood.count == 11, "\(flood)")
    }

    /// Resends take at most the target over a second, go in the pacing's
    /// bucket ahead of new packets, and the encoder is given what they leave.
    @Test func resendsTakeAtMostTheTargetAndTheEncoderGetsWhatTheyLeave() {
        var now: UInt64 = 0
        var sender = Self.adaptingAfterTwentyPackets(drained: &now)
        #expect(sender.waitingBytes == 0 && sender.encoderBitrate(now: now) == 96_000)
        let second: UInt64 = 1_000_000_000
        var nack = [UInt8](repeating: 0, count: 64)
        let length = nack.withUnsafeMutableBytes { RTCP.writeNACK(into: $0.baseAddress!, sender: 1, media: Self.ssrc, sequences: Array(100..<120)) }
        _ = nack.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [0], fromRTCPPortOf: [], now: second) }
        Self.frame(packets: 1).withUnsafeBytes { _ = sender.send($0, keyframe: false, captureTime: second, now: second) }
        let polled = Self.poll(&sender, at: second)
        #expect(polled.sent.filter { $0.1 == .repair(0) }.map { Self.sequence($0.0) } == Array(100..<110), "ten resends, the new packet waiting behind them")
        // The bucket (30,000 bytes a second, 1,200 at most) owes the 12,000 resent less its 1,200: 360 ms.
        #expect(sender.nextPacketDue.map { $0 > second + 350_000_000 && $0 < second + 370_000_000 } == true, "\(String(describing: sender.nextPacketDue))")
        #expect(sender.encoderBitrate(now: second) == 20_000, "the resends took it all: the floor")
        #expect(sender.encoderBitrate(now: second + 500_000_000) == 20_000)
        #expect(sender.encoderBitrate(now: second + 1_000_000_000) == 96_000, "a second on, they no longer count")
        #expect(sender.stats.retransmitted == 10)
    }

    @Test func aPLIOrANewFIRAsksForAKeyframeAndARepeatedFIRDoesNot() {
        var sender = Self.sender()
        var bytes = [UInt8](repeating: 0, count: 32)
        func receive(_ length: Int) -> Bool {
            bytes.withUnsafeBytes { sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<length]), fromHostOf: [0], fromRTCPPortOf: [], now: 0).keyframe }
        }
        #expect(receive(bytes.withUnsafeMutableBytes { RTCP.writePLI(into: $0.baseAddress!, sender: 9, media: Self.ssrc) }))
        #expect(!receive(bytes.withUnsafeMutableBytes { RTCP.writePLI(into: $0.baseAddress!, sender: 9, media: Self.ssrc &+ 1) }))
        #expect(receive(bytes.withUnsafeMutableBytes { RTCP.writeFIR(into: $0.baseAddress!, sender: 9, media: Self.ssrc, sequence: 4) }))
        #expect(!receive(bytes.withUnsafeMutableBytes { RTCP.writeFIR(into: $0.baseAddress!, sender: 9, media: Self.ssrc, sequence: 4) }))
        #expect(receive(bytes.withUnsafeMutableBytes { RTCP.writeFIR(into: $0.baseAddress!, sender: 9, media: Self.ssrc, sequence: 5) }))
        let stats = sender.stats
        #expect(stats.pli == 1 && stats.fir == 2)
    }

    @Test func senderReportsFollowTheirScheduleWithTheStreamsCounts() {
        var sender = Self.sender()
        #expect(Self.poll(&sender, at: 0).sent.isEmpty, "no report before the stream begins")
        let start: UInt64 = 5_000_000_000
        Self.frame(packets: 2).withUnsafeBytes { _ = sender.send($0, keyframe: true, captureTime: start, now: start) }
        let first = Self.poll(&sender, at: start + 1_000_000).sent.filter { $0.1 == .control }.map(\.0)
        // 28 bytes: V=2, PT 200, length 6; SSRC; the NTP time; the RTP time of now (1 ms = 90 ticks on); 2 packets, 2,376 payload bytes (descriptors included).
        #expect(first == [[0x80, 200, 0, 6, 0xAB, 0xCD, 0x01, 0x23, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                           0, 0, 0x04, 0x42, 0, 0, 0, 2, 0, 0, 0x09, 0x48]])
        #expect(Self.poll(&sender, at: start + 100_000_000).sent.isEmpty)
        #expect(Self.poll(&sender, at: start + 151_000_000).sent.filter { $0.1 == .control }.count == 1)
        let reports = sender.stats.senderReports
        #expect(reports == 2)
    }

    /// Periodic keyframes stop only when every destination asks for what it
    /// misses, or said it will (a promise that lapses after 5 s of silence).
    @Test func everyDestinationAsksOnlyWhenEachAskedOrPromised() {
        var two = Self.sender(destinations: 2)
        var bytes = [UInt8](repeating: 0, count: 32)
        let pli = bytes.withUnsafeMutableBytes { RTCP.writePLI(into: $0.baseAddress!, sender: 9, media: Self.ssrc) }
        _ = bytes.withUnsafeBytes { two.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<pli]), fromHostOf: [0], fromRTCPPortOf: [], now: 0) }
        let firstAsked = two.everyDestinationAsks(now: 0)
        #expect(!firstAsked)
        _ = bytes.withUnsafeBytes { two.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<pli]), fromHostOf: [1], fromRTCPPortOf: [], now: 0) }
        let bothAsked = two.everyDestinationAsks(now: 0)
        #expect(bothAsked)
        // From one destination's RTCP port, an ask speaks for it alone, not for another on its host (a player beside Janus).
        var beside = Self.sender(destinations: 2)
        _ = bytes.withUnsafeBytes { beside.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<pli]), fromHostOf: [0, 1], fromRTCPPortOf: [1], now: 0) }
        let onlyOneAsked = !beside.everyDestinationAsks(now: 0)
        #expect(onlyOneAsked)
        var one = Self.sender()
        let promise = bytes.withUnsafeMutableBytes { RTCP.writeAsksForRepair(into: $0.baseAddress!, sender: 9, media: Self.ssrc) }
        let at: UInt64 = 10_000_000_000
        _ = bytes.withUnsafeBytes { one.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<promise]), fromHostOf: [0], fromRTCPPortOf: [0], now: at) }
        let (held, lapsed) = (one.everyDestinationAsks(now: at + 4_000_000_000), one.everyDestinationAsks(now: at + 6_000_000_000))
        #expect(held && !lapsed)
        // From the host but not from the destination's RTCP port, a promise speaks for nobody.
        var stranger = Self.sender()
        _ = bytes.withUnsafeBytes { stranger.receiveRTCP(UnsafeRawBufferPointer(rebasing: $0[..<promise]), fromHostOf: [0], fromRTCPPortOf: [], now: at) }
        let strangerSpoke = stranger.everyDestinationAsks(now: at)
        #expect(!strangerSpoke)
    }
}
