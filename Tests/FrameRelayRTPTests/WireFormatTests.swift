import FrameRelayRTP
import Testing

/// The wire formats against byte-exact vectors, in one process: the VP8
/// packetizer and payload descriptor (RFC 7741), the jitter buffer, the
/// NACK rule and the retransmission history.
struct WireFormatTests {
    // MARK: - Packetizer

    /// Every packet `packetizer` makes of `frame`, with its sequence number.
    private func packets(_ frame: [UInt8], _ packetizer: inout RTPPacketizer, timestamp: UInt32 = 0x0102_0304, layer: VP8TemporalLayer? = nil) -> [[UInt8]] {
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: packetizer.maxPacketSize, alignment: 16)
        defer { scratch.deallocate() }
        var out: [[UInt8]] = []
        frame.withUnsafeBytes { bytes in
            packetizer.packetize(bytes, timestamp: timestamp, layer: layer, scratch: scratch) { packet, sequence in
                #expect(UInt16(packet[2]) << 8 | UInt16(packet[3]) == sequence)
                out.append(Array(packet))
            }
        }
        return out
    }

    @Test func aSmallFrameIsOnePacketWithTheMarkerAndAFifteenBitPictureID() {
        var packetizer = RTPPacketizer(ssrc: 0xCAFE_BABE, maxPacketSize: 1200, sequence: 0x1234, pictureID: 0x0ABC)
        let out = packets([0xDE, 0xAD, 0xBE], &packetizer)
        #expect(out == [[
            0x80, 0xE0, 0x12, 0x34,  // V=2; M=1, PT=96; sequence
            0x01, 0x02, 0x03, 0x04,  // timestamp
            0xCA, 0xFE, 0xBA, 0xBE,  // SSRC
            0x90, 0x80, 0x8A, 0xBC,  // X=1 S=1 PID=0; I=1; M=1 PictureID 0x0ABC
            0xDE, 0xAD, 0xBE,
        ]])
        #expect(packetizer.pictureID == 0x0ABD)
    }

    @Test func aFrameOneByteOverAPacketSplitsEvenlyWithStartOnTheFirstAndMarkerOnTheLast() {
        let room = 100 - RTPPacketizer.headerSize - RTPPacketizer.descriptorSize  // 84
        var packetizer = RTPPacketizer(ssrc: 1, maxPacketSize: 100, sequence: 7, pictureID: 1)
        #expect(packets([UInt8](repeating: 1, count: room), &packetizer).map(\.count) == [100])
        let frame = (0..<(room + 1)).map { UInt8(truncatingIfNeeded: $0) }
        let out = packets(frame, &packetizer)
        #expect(out.map(\.count) == [16 + 43, 16 + 42])
        #expect(out.map { $0[1] } == [0x60, 0xE0])  // the marker only on the last
        #expect(out.map { $0[12] } == [0x90, 0x80])  // S only on the first
        #expect(out.map { UInt16($0[14] & 0x7F) << 8 | UInt16($0[15]) } == [2, 2])  // one PictureID for the frame
        #expect(Array(out[0][16...] + out[1][16...]) == frame)
        #expect(out.map { UInt16($0[2]) << 8 | UInt16($0[3]) } == [8, 9])
    }

    @Test func aTemporalLayerFrameCarriesTL0PICIDXAndTIDWithYAndN() {
        var packetizer = RTPPacketizer(ssrc: 0xCAFE_BABE, maxPacketSize: 1200, sequence: 0x1234, pictureID: 0x0ABC, baseLayerIndex: 0xFF)
        // A base-layer frame: a new TL0PICIDX (0xFF + 1 wraps to 0), TID 0.
        #expect(packets([0xDE, 0xAD], &packetizer, layer: VP8TemporalLayer(id: 0, sync: false, discardable: false)) == [[
            0x80, 0xE0, 0x12, 0x34, 0x01, 0x02, 0x03, 0x04, 0xCA, 0xFE, 0xBA, 0xBE,
            0x90, 0xE0, 0x8A, 0xBC,  // X=1 S=1; I=1 L=1 T=1; PictureID 0x0ABC
            0x00, 0x00,  // TL0PICIDX 0; TID 0, Y=0, KEYIDX 0
            0xDE, 0xAD,
        ]])
        // The frame above it: the same TL0PICIDX, TID 1, Y=1, N=1.
        #expect(packets([0xBE], &packetizer, layer: VP8TemporalLayer(id: 1, sync: true, discardable: true)) == [[
            0x80, 0xE0, 0x12, 0x35, 0x01, 0x02, 0x03, 0x04, 0xCA, 0xFE, 0xBA, 0xBE,
            0xB0, 0xE0, 0x8A, 0xBD,  // X=1 N=1 S=1; I L T; PictureID 0x0ABD
            0x00, 0x60,  // TL0PICIDX 0; TID 1 (01), Y=1
            0xBE,
        ]])
        // The next base-layer frame counts on; a continuation packet keeps N, not S.
        let next = RTPPacketizer.headerSize + RTPPacketizer.layeredDescriptorSize + 10
        var small = RTPPacketizer(ssrc: 1, maxPacketSize: next, sequence: 0, pictureID: 0, baseLayerIndex: 7)
        let split = packets([UInt8](repeating: 9, count: 11), &small, layer: VP8TemporalLayer(id: 1, sync: false, discardable: true))
        #expect(split.map { Array($0[12..<18]) } == [[0xB0, 0xE0, 0x80, 0x00, 0x07, 0x40], [0xA0, 0xE0, 0x80, 0x00, 0x07, 0x40]])
        #expect(packets([1], &small, layer: VP8TemporalLayer(id: 0, sync: false, discardable: false))[0][16] == 0x08)
        // What is written reads back the same.
        let read = split[0][12...].withUnsafeBytes { VP8PayloadDescriptor($0) }
        #expect(read?.temporalLayer == VP8TemporalLayer(id: 1, sync: false, discardable: true))
        #expect(read?.baseLayerIndex == 7 && read?.dataOffset == 6 && read?.pictureID == 0)
    }

    @Test func sequenceNumbersAndPictureIDsWrap() {
        var packetizer = RTPPacketizer(ssrc: 1, maxPacketSize: 100, sequence: 0xFFFF, pictureID: 0x7FFF)
        let first = packets([UInt8](repeating: 0, count: 150), &packetizer)
        let second = packets([0], &packetizer)
        #expect((first + second).map { UInt16($0[2]) << 8 | UInt16($0[3]) } == [0xFFFF, 0x0000, 0x0001])
        #expect(first[0][14] == 0xFF && first[0][15] == 0xFF)
        #expect(second[0][14] == 0x80 && second[0][15] == 0x00)
    }

    // MARK: - Payload descriptor

    private func descriptor(_ bytes: [UInt8]) -> VP8PayloadDescriptor? {
        bytes.withUnsafeBytes { VP8PayloadDescriptor($0) }
    }

    /// A descriptor's fields in one line: "start key pid=5 data@3".
    private func read(_ bytes: [UInt8]) -> String? {
        descriptor(bytes).map { d in
            [d.startsFrame ? "start" : "inside", d.keyframe ? "key" : "delta", d.pictureID.map { "pid=\($0)" } ?? "no-pid", "data@\(d.dataOffset)"]
                .joined(separator: " ")
        }
    }

    @Test func payloadDescriptorsAreReadAsRFC7741LaysThemOut() {
        // The shortest: S=1, PID=0, a keyframe (P=0).
        #expect(read([0x10, 0x9C]) == "start key no-pid data@1")
        // 15-bit PictureID, an interframe (P=1).
        #expect(read([0x90, 0x80, 0x81, 0x23, 0x01]) == "start delta pid=291 data@4")
        // 7-bit PictureID.
        #expect(read([0x90, 0x80, 0x05, 0x00]) == "start key pid=5 data@3")
        // PictureID, TL0PICIDX (L) and TID/KEYIDX (T): 6 bytes before the data.
        #expect(descriptor([0x90, 0xE0, 0x80, 0x07, 0x11, 0x22, 0x00])?.dataOffset == 6)
        #expect(descriptor([0x90, 0xE0, 0x80, 0x07, 0x11, 0x22, 0x00])?.baseLayerIndex == 0x11)
        #expect(descriptor([0xB0, 0xE0, 0x80, 0x07, 0x11, 0xA0, 0x00])?.temporalLayer == VP8TemporalLayer(id: 2, sync: true, discardable: true))
        // K without T: KEYIDX only, no layer.
        #expect(descriptor([0x90, 0x10, 0x05, 0x00])?.temporalLayer == nil)
        #expect(descriptor([0x90, 0x10, 0x05, 0x00])?.dataOffset == 3)
        // A continuation (S=0) and a later partition's start (PID=1) do not start the frame.
        #expect(descriptor([0x80, 0x80, 0x80, 0x07, 0x00])?.startsFrame == false)
        #expect(descriptor([0x11, 0x00])?.startsFrame == false)
        #expect(descriptor([0x11, 0x00])?.keyframe == false)
    }

    @Test func aDescriptorThatRunsPastItsPayloadIsRefused() {
        for bytes: [UInt8] in [[], [0x80], [0x90, 0x80], [0x90, 0x80, 0x80], [0x90, 0x60]] {
            #expect(descriptor(bytes) == nil, "\(bytes)")
        }
        // Ending right after the descriptor is whole (a frame's data may be in later packets), not a keyframe.
        #expect(read([0x90, 0x80, 0x80, 0x01]) == "start delta pid=1 data@4")
    }

    // MARK: - Jitter buffer

    /// `#expect` for what reads a `~Copyable` value (the jitter buffer, the
    /// history), which the macro cannot take apart.
    private func check(_ holds: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(holds, sourceLocation: sourceLocation)
    }

    /// Inserts a packet whose payload is a descriptor (`first` starts the frame) and `data`.
    private func insert(_ buffer: inout JitterBuffer, _ sequence: UInt16, timestamp: UInt32, first: Bool, marker: Bool, _ data: [UInt8]) -> Bool {
        ([first ? 0x10 : 0x00] + data).withUnsafeBytes { buffer.insert($0, sequence: sequence, timestamp: timestamp, marker: marker) }
    }

    @Test func aFrameIsWholeOnlyWhenEveryPacketIsInWhateverTheOrder() {
        var buffer = JitterBuffer()
        check(insert(&buffer, 12, timestamp: 900, first: false, marker: true, [5, 6]))
        check(buffer.wholeFrame(containing: 12) == nil)
        check(insert(&buffer, 10, timestamp: 900, first: true, marker: false, [1, 2]))
        check(buffer.wholeFrame(containing: 10) == nil)  // 11 is missing
        check(insert(&buffer, 11, timestamp: 900, first: false, marker: false, [3, 4]))
        for sequence: UInt16 in [10, 11, 12] {
            let frame = buffer.wholeFrame(containing: sequence)
            #expect(frame?.first == 10 && frame?.packets == 3 && frame?.bytes == 6)
        }
        let frame = buffer.wholeFrame(containing: 11)!
        check(Array(buffer.assemble(frame)) == [1, 2, 3, 4, 5, 6])
        check(buffer.wholeFrame(containing: 11) == nil)  // assembling frees the slots
    }

    @Test func aFrameAcrossTheSequenceWrapIsPutTogether() {
        var buffer = JitterBuffer()
        check(insert(&buffer, 0xFFFE, timestamp: 1, first: true, marker: false, [1]))
        check(insert(&buffer, 0xFFFF, timestamp: 1, first: false, marker: false, [2]))
        check(insert(&buffer, 0x0000, timestamp: 1, first: false, marker: true, [3]))
        let frame = buffer.wholeFrame(containing: 0)
        #expect(frame?.first == 0xFFFE && frame?.packets == 3)
        check(frame.map { Array(buffer.assemble($0)) } == [1, 2, 3])
    }

    @Test func aPacketOfAnotherTimestampOrAnEarlierLapIsNotPartOfTheFrame() {
        var buffer = JitterBuffer()
        check(insert(&buffer, 5, timestamp: 100, first: true, marker: false, [1]))
        check(insert(&buffer, 6, timestamp: 200, first: false, marker: true, [2]))
        check(buffer.wholeFrame(containing: 5) == nil)
        // The slot of 7 holds 7 + 1024's packet: not 7.
        check(insert(&buffer, 7 &+ UInt16(JitterBuffer.capacity), timestamp: 300, first: true, marker: true, [3]))
        check(buffer.wholeFrame(containing: 7) == nil)
        check(buffer.wholeFrame(containing: 7 &+ UInt16(JitterBuffer.capacity))?.packets == 1)
    }

    @Test func aPayloadLongerThanAnMTUsIsRefused() {
        var buffer = JitterBuffer()
        check(!insert(&buffer, 3, timestamp: 5, first: true, marker: true, [UInt8](repeating: 0, count: JitterBuffer.payloadBytes)))
        check(insert(&buffer, 3, timestamp: 5, first: true, marker: true, [UInt8](repeating: 0, count: JitterBuffer.payloadBytes - 1)))
        check(buffer.wholeFrame(containing: 3)?.packets == 1)
    }

    /// `frame-relay receive`'s NACK rule (one type with the subscriber's,
    /// ``MissingPackets``): each packet of a gap of at most 64 asked for once,
    /// in one NACK, never again; a wider gap is a lost frame, not asked for.
    @Test func thePlainReceiverAsksOnceForEachPacketOfANarrowGap() {
        var missing = MissingPackets(rule: .plainRTP)
        var asks: [UInt16] = []
        let start: UInt64 = 1_000_000_000
        missing.received(40, retransmitted: false, now: start)
        missing.received(44, retransmitted: false, now: start)
        missing.due(now: start, into: &asks)
        check(asks == [41, 42, 43])
        asks.removeAll()
        missing.due(now: start + 50_000_000, into: &asks)
        check(asks.isEmpty && missing.counts.givenUp == 3)
        missing.received(44 + 66, retransmitted: false, now: start)
        missing.due(now: start, into: &asks)
        check(asks.isEmpty && missing.expected == 71)
    }

    // MARK: - Retransmission history

    private func record(_ history: inout RetransmissionHistory, _ sequence: UInt16, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { history.record($0, sequence: sequence) }
    }

    @Test func aNackedPacketIsSentAgainByteForByteAtMostEveryHundredMilliseconds() {
        var history = RetransmissionHistory(packetSize: 64)
        record(&history, 500, [1, 2, 3])
        record(&history, 501, [4, 5])
        let now: UInt64 = 5_000_000_000
        check(history.resend(501, now: now).map(Array.init) == [4, 5])
        check(history.resend(501, now: now + 99_999_999) == nil)
        check(history.resend(501, now: now + 100_000_000).map(Array.init) == [4, 5])
        check(history.resend(500, now: now).map(Array.init) == [1, 2, 3])
        check(history.resend(502, now: now) == nil)  // never sent
    }

    @Test func aPacketOverwrittenALapLaterIsNoLongerHeld() {
        var history = RetransmissionHistory(packetSize: 64)
        record(&history, 0xFFFF, [9])
        record(&history, 0xFFFF &+ UInt16(RetransmissionHistory.capacity), [8])
        check(history.resend(0xFFFF, now: 1) == nil)
        check(history.resend(0xFFFF &+ UInt16(RetransmissionHistory.capacity), now: 1).map(Array.init) == [8])
    }

    @Test func resendsAreBudgetedToOneBurstAndOneMoreForEachPacketSent() {
        var history = RetransmissionHistory(packetSize: 16)
        for sequence in 0..<RetransmissionHistory.capacity { record(&history, UInt16(sequence), [UInt8(truncatingIfNeeded: sequence)]) }
        var resent = 0
        for sequence in 0..<RetransmissionHistory.capacity where history.resend(UInt16(sequence), now: 1) != nil { resent += 1 }
        #expect(resent == RetransmissionHistory.resendBurst)
        record(&history, UInt16(RetransmissionHistory.capacity), [0])
        check(history.resend(UInt16(RetransmissionHistory.resendBurst), now: 1) != nil)
        check(history.resend(UInt16(RetransmissionHistory.resendBurst + 1), now: 1) == nil)
    }

    /// Each destination has its own budget and its own 100 ms per packet:
    /// one that spent its budget leaves another's whole, and a packet just
    /// resent to one goes to another that asks.
    @Test func eachDestinationHasItsOwnResendBudget() {
        var history = RetransmissionHistory(packetSize: 16, destinations: 2)
        for sequence in 0..<RetransmissionHistory.capacity { record(&history, UInt16(sequence), [UInt8(truncatingIfNeeded: sequence)]) }
        var resent = 0
        for sequence in 0..<RetransmissionHistory.capacity where history.resend(UInt16(sequence), to: 1, now: 1) != nil { resent += 1 }
        #expect(resent == RetransmissionHistory.resendBurst)
        #expect(history.resend(0, to: 0, now: 1).map(Array.init) == [0], "destination 0's budget is its own")
        #expect(history.resend(0, to: 0, now: 2) == nil, "within 100 ms of its own resend")
        #expect(history.resend(0, to: 2, now: 1) == nil, "no destination 2")
    }
}
