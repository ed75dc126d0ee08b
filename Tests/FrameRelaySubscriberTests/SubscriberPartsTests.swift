@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRTP
@testable import FrameRelaySubscriber
import FrameRelayTestSupport
import Testing
import FrameRelayJanus

/// The subscriber's parts on their own, against byte-exact vectors: STUN
/// (RFC 5769's samples), the SDP it reads and writes, NACK bookkeeping, and the impaired link (freezes: FreezeRuleTests).
@Suite struct SubscriberPartsTests {
    // MARK: - STUN

    /// RFC 5769 §2.1: a binding request with USERNAME "evtj:h6vY",
    /// MESSAGE-INTEGRITY keyed with "VOkJxbRl1RmTxUk/WvJxBt", and FINGERPRINT.
    static let sampleRequest: [UInt8] = [
        0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
        0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c, 0x69, 0x65, 0x6e, 0x74,
        0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff, 0x80, 0x29, 0x00, 0x08, 0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36,
        0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76, 0x59, 0x20, 0x20, 0x20,
        0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e, 0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49,
        0xc1, 0xb5, 0x71, 0xa2, 0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
    ]
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)

    @Test func rfc5769SampleRequestIsReadAndItsFingerprintIsZlibsCRC() {
        Self.sampleRequest.withUnsafeBytes { bytes in
            #expect(STUN.isRequest(bytes))
            let request = STUN.parseRequest(bytes, localUfrag: Array("evtj".utf8), password: Self.password)
            #expect(request != nil && request?.nominated == false)
            // FINGERPRINT: the CRC-32 of the 100 bytes before it, XOR 0x5354554E.
            #expect(STUN.crc32(UnsafeRawBufferPointer(rebasing: bytes[..<100])) ^ STUN.fingerprintXor == 0xe57a_3bcf)
        }
    }

    @Test(arguments: ["wrong password", "wrong ufrag", "a byte changed", "cut short"])
    func aRequestThatIsNotOursIsRefused(_ change: String) {
        var packet = Self.sampleRequest
        var password = Self.password, ufrag = Array("evtj".utf8)
        switch change {
        case "wrong password": password[0] ^= 1
        case "wrong ufrag": ufrag = Array("evtx".utf8)
        case "a byte changed": packet[50] ^= 0x40
        default: packet.removeLast(30)
        }
        packet.withUnsafeBytes { #expect(STUN.parseRequest($0, localUfrag: ufrag, password: password) == nil) }
    }

    /// The answer to the sample request, for 192.0.2.1:32853 (RFC 5769 §2.2's
    /// address): its XOR-MAPPED-ADDRESS bytes as the RFC's, and its
    /// MESSAGE-INTEGRITY and FINGERPRINT checked by Python's hmac and zlib.
    @Test func theAnswerCarriesTheAddressAndChecksOutWithAnotherImplementation() throws {
        let request = try #require(Self.sampleRequest.withUnsafeBytes { STUN.parseRequest($0, localUfrag: Array("evtj".utf8), password: Self.password) })
        var answer = [UInt8](repeating: 0, count: 64)
        let length = answer.withUnsafeMutableBytes { STUN.writeSuccess(into: $0.baseAddress!, request: request, address: 0xC000_0201, port: 32853, password: Self.password) }
        #expect(length == 64)
        #expect(Array(answer[0..<4]) == [0x01, 0x01, 0x00, 0x2c] && Array(answer[8..<20]) == Array(Self.sampleRequest[8..<20]))
        #expect(Array(answer[20..<32]) == [0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43])
        let hex = answer.map { String(format: "%02x", $0) }.joined()
        let check = run("/usr/bin/python3", ["-c", """
            import binascii, hmac, hashlib, struct, zlib, sys
            m = binascii.unhexlify("\(hex)")
            head = bytearray(m[:32]); struct.pack_into(">H", head, 2, 32 - 20 + 24)
            ok_mi = hmac.new(b"VOkJxbRl1RmTxUk/WvJxBt", bytes(head), hashlib.sha1).digest() == m[36:56]
            ok_fp = struct.unpack(">I", m[60:64])[0] == (zlib.crc32(m[:56]) ^ 0x5354554E)
            print("integrity", ok_mi, "fingerprint", ok_fp)
            """])
        #expect(check.stdout.contains("integrity True fingerprint True"), "\(check.stdout) \(check.stderr)")
    }

    // MARK: - SDP

    /// An offer as Janus 1.1.2's streaming plugin makes it (captured).
    static let janusOffer = [
        "v=0", "o=- 1796279220090571 1 IN IP4 127.0.0.1", "s=Mountpoint 252364205097505", "t=0 0", "a=group:BUNDLE v",
        "a=ice-options:trickle", "a=fingerprint:sha-256 73:33:D0:11:F9:89:F9:F7:3D:C9:C8:A9:FB:CF:88:A0:96:1A:0D:EA:63:90:A5:37:26:2E:25:EA:59:17:F1:95",
        "a=extmap-allow-mixed", "a=msid-semantic: WMS *", "m=video 9 UDP/TLS/RTP/SAVPF 96 97", "c=IN IP4 127.0.0.1", "a=sendonly", "a=mid:v",
        "a=rtcp-mux", "a=ice-ufrag:rGaC", "a=ice-pwd:XYXc32NOzfVXFCpLe2UrrK", "a=ice-options:trickle", "a=setup:actpass", "a=rtpmap:96 VP8/90000",
        "a=rtcp-fb:96 ccm fir", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 goog-remb", "a=rtcp-fb:96 transport-cc",
        "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time", "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid",
        "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96", "a=ssrc-group:FID 1072619482 1258909840", "a=msid:janus janusv",
        "a=ssrc:1072619482 cname:janus", "a=ssrc:1258909840 cname:janus", "a=candidate:1 1 udp 2015363327 10.200.0.1 47569 typ host", "a=end-of-candidates", "",
    ].joined(separator: "\r\n")

    @Test func janusOfferIsReadAndAnsweredAsAnICELiteDTLSClientTakingRTX() throws {
        let offer = try JanusOffer(parsing: Self.janusOffer)
        #expect(offer.iceUfrag == "rGaC" && offer.icePassword == "XYXc32NOzfVXFCpLe2UrrK" && offer.mid == "v")
        #expect(offer.payloadType == 96 && offer.rtxPayloadType == 97)
        #expect(offer.fingerprint.count == 32 && offer.fingerprint.first == 0x73 && offer.fingerprint.last == 0x95)
        #expect(offer.ssrcs == [1_072_619_482, 1_258_909_840])
        let answer = offer.answer(ufrag: "abcd", password: "p" + String(repeating: "x", count: 21), fingerprint: "sha-256 AA", address: "10.200.0.1", port: 4000)
            .components(separatedBy: "\r\n")
        for line in ["a=ice-lite", "m=video 9 UDP/TLS/RTP/SAVPF 96 97", "a=recvonly", "a=setup:active", "a=rtcp-mux", "a=ice-ufrag:abcd",
                     "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96", "a=rtcp-fb:96 nack pli", "a=candidate:1 1 udp 2130706431 10.200.0.1 4000 typ host"] {
            #expect(answer.contains(line), "\(line) missing from \(answer)")
        }
        // It takes no header extension: Janus then sends none.
        #expect(!answer.contains { $0.hasPrefix("a=extmap") })
    }

    /// Only the offer's SSRCs reach libsrtp (which keeps state for each it
    /// authenticates); an offer that names none lets the first four in.
    @Test func onlyTheOffersSSRCsAreDecrypted() throws {
        var filter = SSRCFilter(offered: try JanusOffer(parsing: Self.janusOffer).ssrcs)
        #expect(filter.accepts(1_072_619_482) && filter.accepts(1_258_909_840))
        #expect((1...10_000).allSatisfy { !filter.accepts(UInt32($0)) })
        var learning = SSRCFilter(offered: [])
        #expect((1...4).allSatisfy { learning.accepts(UInt32($0)) } && learning.accepts(3))
        #expect((5...10_000).allSatisfy { !learning.accepts(UInt32($0)) })
    }

    /// Janus's media address is the first unicast IPv4 host candidate: a
    /// name (never looked up), 0.0.0.0, multicast and broadcast are passed over.
    @Test func theMediaAddressIsTheFirstUnicastIPv4Candidate() throws {
        let candidate = "a=candidate:1 1 udp 2015363327 10.200.0.1 47569 typ host"
        let others = ["attacker.invalid", "0.0.0.0", "224.0.0.1", "255.255.255.255", "999.1.1.1", "::1"]
            .map { "a=candidate:2 1 udp 2015363327 \($0) 47569 typ host" }
        let offer = try JanusOffer(parsing: Self.janusOffer.replacingOccurrences(of: candidate, with: (others + [candidate]).joined(separator: "\r\n")))
        #expect(offer.candidateAddress == "10.200.0.1")
        #expect(try JanusOffer(parsing: Self.janusOffer.replacingOccurrences(of: candidate, with: others.joined(separator: "\r\n"))).candidateAddress == nil)
    }

    @Test(arguments: [
        ("a=rtpmap:96 VP8/90000", "a=rtpmap:96 H264/90000", "no VP8 in its video section"),
        ("m=video 9 UDP/TLS/RTP/SAVPF 96 97", "m=audio 9 UDP/TLS/RTP/SAVPF 111", "no video section"),
        ("a=fingerprint:sha-256", "a=fingerprint:sha-1", "no sha-256 DTLS fingerprint"),
        ("a=ice-pwd:XYXc32NOzfVXFCpLe2UrrK", "a=x-nothing", "no ICE credentials"),
    ])
    func anOfferWithoutWhatWeNeedIsRefusedSayingWhat(_ original: String, _ replacement: String, _ reason: String) {
        let sdp = Self.janusOffer.replacingOccurrences(of: original, with: replacement)
        #expect(throws: JanusOfferError.self) { try JanusOffer(parsing: sdp) }
        #expect((try? JanusOffer(parsing: sdp)) == nil)
        do {
            _ = try JanusOffer(parsing: sdp)
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    // MARK: - NACK

    @Test func missingPacketsAreAskedForARoundTripApartAndRecoveredOnlyByRetransmissions() {
        var missing = MissingPackets(rule: .webRTC)
        missing.received(10, retransmitted: false, now: 0)
        missing.received(14, retransmitted: false, now: 1_000_000)  // 11, 12, 13 missing
        var asks: [UInt16] = []
        missing.due(now: 1_000_000, into: &asks)
        #expect(asks == [11, 12, 13])
        asks.removeAll()
        missing.due(now: 50_000_000, into: &asks)
        #expect(asks.isEmpty)  // not again within 100 ms
        missing.received(11, retransmitted: true, now: 21_000_000)
        missing.received(12, retransmitted: false, now: 22_000_000)  // only late
        missing.due(now: 110_000_000, into: &asks)
        #expect(asks == [13])
        #expect(missing.counts.recovered == 1 && missing.counts.received == 4 && missing.expected == 5)
        #expect(missing.roundTrip == 20_000_000)
        var givenUp: [UInt64] = []
        for step in 2...20 { asks.removeAll(); missing.due(now: 110_000_000 + UInt64(step) * 100_000_000, into: &asks) { givenUp.append($0) } }
        #expect(missing.isEmpty && missing.counts.givenUp == 1)
        #expect(givenUp == [1_000_000], "given up on, each when it was found missing")
    }

    /// A viewer's loss after repair over time: a packet of our packetizer's
    /// stream lost at 2.5 s and never sent again counts in the third second
    /// of its watch, where it went missing, not where NACK gave up on it, and
    /// the frames before it count in their seconds.
    @Test func aViewersLossCountsInTheSecondThePacketWentMissing() throws {
        let follower = try StreamFollower(payloadType: 96, retransmissionPayloadType: nil, decodes: false, expectedFrames: 256)
        follower.timelineStart = 1_000_000_000
        var packetizer = RTPPacketizer(ssrc: 0x0BAD_CAFE, maxPacketSize: 1200)
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1200, alignment: 8)
        defer { scratch.deallocate() }
        var asks: [UInt16] = []
        for index in 0..<150 {
            let now = 1_000_000_000 + UInt64(index) * 1_000_000_000 / 30
            // Two packets a frame; the first a keyframe (P = 0).
            var frame = [UInt8](repeating: 0x5A, count: 1_800)
            frame[0] = index == 0 ? 0x00 : 0x01
            var packet = 0
            frame.withUnsafeBytes { frame in
                packetizer.packetize(frame, timestamp: UInt32(index * 3000), scratch: scratch) { bytes, _ in
                    defer { packet += 1 }
                    if index == 75, packet == 1 { return }  // 2.5 s after the watch began
                    follower.receive(bytes, now: now)
                }
            }
            asks.removeAll()
            follower.missingDue(now: now, into: &asks)
        }
        let lost = follower.lostEachSecond
        #expect(lost.count == 3 && lost[2] == 1 && lost.reduce(0, +) == 1, "\(lost)")
        #expect(follower.framesEachSecond.first == 30, "\(follower.framesEachSecond)")
        // What a viewer reports is whole seconds: the one in progress would read as a fall in frames/s.
        var stats = SubscriberStats()
        // (After the packet lost at 2.5 s, the frames wait for a keyframe that never comes.)
        follower.fill(&stats, now: 1_000_000_000 + 2_970_000_000)
        #expect(stats.framesEachSecond == [30, 30] && stats.lostEachSecond == [0, 0], "\(stats.framesEachSecond) \(stats.lostEachSecond)")
        follower.fill(&stats, now: 1_000_000_000 + 3_000_000_000)
        #expect(stats.framesEachSecond == [30, 30, 15] && stats.lostEachSecond == [0, 0, 1], "\(stats.framesEachSecond) \(stats.lostEachSecond)")
    }

    /// A hostile peer's sequence jumps: one stray number, or one every other
    /// packet, make no packet lost and nothing asked for (before, one jump
    /// made 28.7 million packets "lost"); a restart the next packet confirms
    /// starts a new run, and its losses are the run's own.
    @Test func sequenceJumpsAreNotLossesAndARestartCountsOnlyItsOwnRun() {
        var missing = MissingPackets(rule: .webRTC)
        var asks: [UInt16] = []
        var sequence: UInt16 = 1000
        for index in 0..<2000 {
            missing.received(sequence, retransmitted: false, now: UInt64(index) * 1_000_000)
            // Every other packet, a number 30,000 away.
            if index % 2 == 0 { missing.received(sequence &+ 30_000, retransmitted: false, now: UInt64(index) * 1_000_000) }
            sequence &+= 1
        }
        missing.due(now: 2_000_000_000, into: &asks)
        #expect(asks.isEmpty && missing.expected == 2000 && missing.counts.received == 2000, "\(missing.expected) expected, \(missing.counts)")
        // The sender restarts at 9,000 and loses 9,002 there: 2,000 before, 4 in the new run, 1 of them lost.
        for next: UInt16 in [9000, 9001, 9003, 9004] { missing.received(next, retransmitted: false, now: 3_000_000_000) }
        missing.due(now: 3_000_000_000, into: &asks)
        #expect(asks == [9002] && missing.expected == 2004 && missing.counts.received == 2003, "\(asks), \(missing.expected) expected, \(missing.counts)")
    }

    @Test func aNACKListsRunsOfSixteenAsTheParserReadsThem() {
        let sequences: [UInt16] = [65535, 0, 2, 15, 40]
        var bytes = [UInt8](repeating: 0, count: 64)
        let length = bytes.withUnsafeMutableBytes { RTCP.writeNACK(into: $0.baseAddress!, sender: 1, media: 0xABCD, sequences: sequences) }
        // One header and two FCIs: 65535 with 0, 2 and 15 (bits 0, 2 and 15), then 40 alone.
        #expect(length == 20)
        #expect(Array(bytes[0..<4]) == [0x81, 205, 0x00, 0x04])
        #expect(Array(bytes[12..<20]) == [0xFF, 0xFF, 0x80, 0x05, 0x00, 40, 0x00, 0x00])
        var feedback = RTCP.Feedback()
        bytes.withUnsafeBytes { RTCP.parse(UnsafeRawBufferPointer(rebasing: $0[..<length]), ssrc: 0xABCD, into: &feedback) }
        #expect(feedback.nacked == sequences)
    }

    // MARK: - The impaired link

    @Test func theLinkDelaysInOrderDropsWhatItShouldAndQueuesAtItsRate() throws {
        var conditions = try LinkConditions(parsing: "delay=40ms,jitter=10ms")
        let address = SocketAddress()
        let path = ImpairedPath(conditions, limitsRate: true, capacity: 256 * 1536)
        let packet = [UInt8](repeating: 1, count: 1000)
        var delivered: [UInt64] = []
        for index in 0..<200 {
            let now = UInt64(index) * 300_000
            packet.withUnsafeBytes { #expect(path.admit($0, address: address, now: now)) }
            path.release(now: now) { _, _ in delivered.append(now) }
        }
        var order: [UInt8] = []
        path.release(now: .max) { bytes, _ in order.append(bytes[0]) }
        #expect(delivered.count + order.count == 200)
        #expect(path.nextDue == nil)
        // Each packet leaves 30–50 ms after it came, never before the one before it.
        let timed = ImpairedPath(conditions, limitsRate: true, capacity: 256 * 1536)
        var dues: [UInt64] = []
        for index in 0..<100 { packet.withUnsafeBytes { _ = timed.admit($0, address: address, now: UInt64(index) * 1_000_000) }; dues.append(timed.nextDue ?? 0) }
        var released: [UInt64] = []
        var clock: UInt64 = 0
        while let due = timed.nextDue { clock = due; timed.release(now: clock) { _, _ in released.append(clock) } }
        #expect(released == released.sorted() && released.count == 100)
        #expect(released.first! >= 30_000_000 && released.first! <= 50_000_000)
        // 5 % loss over 20,000 packets.
        conditions = try LinkConditions(parsing: "loss=5%")
        let lossy = ImpairedPath(conditions, limitsRate: true, capacity: 64 * 1536)
        for _ in 0..<20_000 { packet.withUnsafeBytes { _ = lossy.admit($0, address: address, now: 0) }; lossy.release(now: .max) { _, _ in } }
        #expect((800...1200).contains(lossy.lost), "lost \(lossy.lost) of 20,000")
        // 1 Mbit/s: a burst of 1000-byte packets leaves 8.224 ms apart (with IP and UDP headers); past 50 ms of queue, drops.
        let narrow = ImpairedPath(try LinkConditions(parsing: "rate=1mbit"), limitsRate: true, capacity: 64 * 1536)
        var accepted = 0
        for _ in 0..<10 { packet.withUnsafeBytes { if narrow.admit($0, address: address, now: 0) { accepted += 1 } } }
        #expect(accepted == 7 && narrow.overflowed == 3)
        var times: [UInt64] = []
        while let due = narrow.nextDue { narrow.release(now: due) { _, _ in times.append(due) } }
        #expect(times == (1...7).map { UInt64($0) * 8_224_000 })
    }

    /// Datagrams of any size a UDP datagram has pass whole and in order
    /// through the path's byte ring as it wraps, and what does not fit is
    /// dropped and counted as the buffer's, not the rate's.
    @Test func theLinkHoldsDatagramsOfAnySizeWholeAndCountsWhatDoesNotFit() throws {
        let path = ImpairedPath(try LinkConditions(parsing: "delay=10ms"), limitsRate: false, capacity: 100_000)
        var generator = SystemRandomNumberGenerator()
        var admitted: [[UInt8]] = [], delivered: [[UInt8]] = []
        var now: UInt64 = 0
        for index in 0..<3000 {
            now += UInt64.random(in: 0...400_000, using: &generator)
            let size = index % 97 == 0 ? 65_507 : Int.random(in: 1...3000, using: &generator)
            let packet = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            if packet.withUnsafeBytes({ path.admit($0, address: SocketAddress(), now: now) }) { admitted.append(packet) }
            path.release(now: now) { bytes, _ in delivered.append(Array(bytes)) }
        }
        path.release(now: .max) { bytes, _ in delivered.append(Array(bytes)) }
        #expect(delivered == admitted, "\(delivered.count) delivered of \(admitted.count) admitted")
        #expect(admitted.contains { $0.count == 65_507 }, "no 64 KB datagram fitted")
        #expect(UInt64(admitted.count) + path.bufferFull == 3000 && path.bufferFull > 0 && path.overflowed == 0 && path.lost == 0,
                "\(admitted.count) admitted, \(path.bufferFull) for the buffer")
    }

    @Test func aLinkThatChangesHoldsEachRateFromItsTime() throws {
        let link = try LinkConditions(parsing: "rate=5mbit@0s,rate=1mbit@20s,rate=5mbit@40s")
        #expect(link.rate == 5_000_000 && link.changes.map(\.at) == [20_000_000_000, 40_000_000_000])
        #expect([0, 19, 20, 39, 40, 100].map { link.at(UInt64($0) * 1_000_000_000).rate } == [5_000_000, 5_000_000, 1_000_000, 1_000_000, 5_000_000, 5_000_000])
        // A path on it: a 1,172-byte packet (1,200 on the wire) takes 1.92 ms at 5 Mbit/s and 9.6 ms at 1 Mbit/s, from the first packet's time.
        let path = ImpairedPath(link, limitsRate: true, capacity: 1 << 20)
        let packet = [UInt8](repeating: 0, count: 1172), first: UInt64 = 7_000_000_000
        var dues: [UInt64] = []
        for elapsed: UInt64 in [0, 25, 45] {
            let now = first + elapsed * 1_000_000_000
            packet.withUnsafeBytes { #expect(path.admit($0, address: SocketAddress(), now: now)) }
            dues.append((path.nextDue ?? 0) - now)
            path.release(now: .max) { _, _ in }
        }
        #expect(dues == [1_920_000, 9_600_000, 1_920_000])
    }

    @Test(arguments: [
        ("loss=2%,delay=40ms,rate=3mbit", "loss=2%,delay=40ms,rate=3mbit"),
        ("rate=500kbit,jitter=5ms,delay=10ms", "delay=10ms,jitter=5ms,rate=500kbit"),
        ("perfect", "perfect"),
        ("rate=5mbit@0s,rate=1mbit@20s,rate=5mbit@40s", "rate=5mbit,rate=1mbit@20s,rate=5mbit@40s"),
        ("loss=1%,delay=20ms@5s,loss=3%@5s", "loss=1%,loss=3%@5s,delay=20ms@5s"),
        // Changes back to none: the load test hands the text to its viewers, which must read the same link from it.
        ("loss=5%,loss=0%@10s", "loss=5%,loss=0%@10s"),
        ("delay=40ms,delay=0ms@10s", "delay=40ms,delay=0ms@10s"),
        ("rate=1mbit,queue=300ms,queue=50ms@2s", "rate=1mbit,queue=300ms,queue=50ms@2s"),
        // Times to the nearest nanosecond: 1.001 s and 1001 ms are one time.
        ("rate=1mbit@1.001s,loss=1%@1001ms", "loss=1%@1.001s,rate=1mbit@1.001s,queue=50ms@1.001s"),
        ("queue=300ms,rate=1mbit@10s", "rate=1mbit@10s,queue=300ms@10s"),
    ])
    func linksReadAndSayThemselves(_ text: String, _ canonical: String) throws {
        let link = try LinkConditions(parsing: text)
        #expect(link.description == canonical)
        #expect(try LinkConditions(parsing: link.description).description == canonical, "the text reads back as the same link")
    }

    @Test(arguments: [
        ("loss=2", "not a percentage"), ("delay=40", "not a duration"), ("rate=fast", "not a rate"), ("speed=1", "unknown \"speed\""),
        ("delay=5ms,jitter=10ms", "jitter is larger than delay"), ("loss", "not NAME=VALUE"),
        ("rate=1mbit@soon", "the time after @ is not a duration"), ("rate=1mbit,,queue=300ms", "an empty part"), (",", "an empty part"),
        ("rate=1mbit,rate=2mbit", "rate is given twice"), ("loss=1%@5s,loss=2%@5s", "loss is given twice for the same time"), ("delay=20ms,jitter=30ms@10s", "jitter is larger than delay"),
        ("rate=1mbit@1.001s,rate=2mbit@1001ms", "rate is given twice for the same time"),
        ("queue=300ms@10s", "queue applies only with a rate"), ("rate=0x10mbit", "not a rate"), ("rate=1mbit@0x1p4s", "not a duration"),
        ("loss=1e1%", "not a percentage"), ("delay=-5ms", "not a duration"), ("loss=nan%", "not a percentage"),
    ])
    func aBadLinkSaysWhichPartIsWrong(_ text: String, _ reason: String) {
        do {
            _ = try LinkConditions(parsing: text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.contains(reason) && error.description.hasPrefix("invalid link \"\(text)\""), "\(error)")
        }
    }

    /// A group's layer second by second: before a viewer's first step, the
    /// layer it started on (not the one it stepped to); a viewer that never
    /// steps is drawn too; viewers of one layer are not. Its loss is the
    /// mean over its viewers, each second.
    @Test func aGroupsLayerEachSecondStartsWhereItsViewersStarted() {
        var stepper = SubscriberStats(), stayer = SubscriberStats(), single = SubscriberStats()
        (stepper.firstLayer, stayer.firstLayer) = ("0/1", "0/1")
        stepper.layerSteps = [.init(ms: 2_500, layer: "1/1")]
        stepper.framesEachSecond = [30, 30, 30, 30]
        stayer.framesEachSecond = [30, 30, 30, 30]
        (stepper.lostEachSecond, stayer.lostEachSecond) = ([0, 4], [0, 0, 2, 0, 6])
        single.framesEachSecond = [15, 15, 15, 15]
        let both = SubscriberStats.overTime([stepper, stayer])
        // 0/1 is 0.5, 1/1 is 1.5: the stepper from its third second.
        #expect(both.layers.prefix(4) == [0.5, 0.5, 1.0, 1.0] && both.lost == [0, 2, 1, 0, 3])
        // Loss after the last decodable frame (a viewer waiting for a keyframe) still counts: the timeline runs to it.
        #expect(both.frames == [30, 30, 30, 30, 0] && both.layers.count == 5)
        #expect(SubscriberStats.overTime([single]).layers.isEmpty)
        #expect(SubscriberStats.overTime([stayer, single]).layers == [0.5, 0.5, 0.5, 0.5, 0.5])
    }
}
