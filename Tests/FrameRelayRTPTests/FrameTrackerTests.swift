import FrameRelayRTP
import Testing

/// Frames followed as a decoder takes them, without decoding
/// (``FrameTracker``): the subscriber's and `frame-relay receive`'s order,
/// hold and keyframe wait.
@Suite struct FrameTrackerTests {
    /// A VP8 payload: descriptor (X, S on a frame's first packet, I, a 15-bit
    /// PictureID), then on the first packet the payload header (P=0: keyframe).
    func payload(picture: UInt16, first: Bool, keyframe: Bool) -> [UInt8] {
        [first ? 0x90 : 0x80, 0x80, 0x80 | UInt8(picture >> 8), UInt8(picture & 0xFF), first ? (keyframe ? 0x00 : 0x01) : 0x55, 0x9d]
    }

    /// Feeds packets (sequence, timestamp, marker, picture, first, keyframe); returns the PictureIDs made decodable and the events.
    func feed(_ tracker: inout FrameTracker, _ packets: [(UInt16, UInt32, Bool, UInt16, Bool, Bool)], now: UInt64 = 1_000) -> [FrameTracker.Event] {
        var events: [FrameTracker.Event] = []
        for (sequence, timestamp, marker, picture, first, keyframe) in packets {
            payload(picture: picture, first: first, keyframe: keyframe).withUnsafeBytes {
                tracker.insert(sequence: sequence, timestamp: timestamp, marker: marker, payload: $0, now: now, into: &events)
            }
        }
        return events
    }

    func decodable(_ events: [FrameTracker.Event]) -> [UInt16] {
        events.compactMap { if case .decodable(let frame, _) = $0 { frame.pictureID } else { nil } }
    }

    /// A frame of `count` packets from `sequence`.
    func frame(_ sequence: UInt16, _ count: Int, picture: UInt16, keyframe: Bool = false) -> [(UInt16, UInt32, Bool, UInt16, Bool, Bool)] {
        (0..<count).map { (sequence &+ UInt16($0), UInt32(picture) * 3000, $0 == count - 1, picture, $0 == 0, keyframe) }
    }

    @Test func framesBecomeDecodableInOrderAcrossPacketReorderingAndWraps() {
        var tracker = FrameTracker()
        // A keyframe whose packets come backwards, across the sequence wrap, with the PictureID about to wrap.
        var events = feed(&tracker, frame(65534, 3, picture: 0x7FFF, keyframe: true).reversed())
        #expect(decodable(events) == [0x7FFF])
        events = feed(&tracker, frame(1, 2, picture: 0) + frame(3, 1, picture: 1) + frame(4, 2, picture: 2))
        #expect(decodable(events) == [0, 1, 2])
        events = feed(&tracker, frame(1, 2, picture: 0))  // duplicates
        #expect(events.isEmpty && tracker.counts.duplicates == 2)
        #expect(tracker.counts.framesDecodable == 4 && tracker.counts.keyframes == 1 && tracker.counts.framesSkipped == 0)
    }

    @Test func aFrameWholeOnlyAfterALaterOneIsHeldAndBothComeInOrder() {
        var tracker = FrameTracker()
        _ = feed(&tracker, frame(100, 2, picture: 10, keyframe: true))
        let second = frame(102, 3, picture: 11)
        var events = feed(&tracker, [second[0], second[2]] + frame(105, 2, picture: 12))
        #expect(decodable(events).isEmpty)  // 12 waits for 11
        events = feed(&tracker, [second[1]], now: 5_000)  // NACK brought the missing packet
        #expect(decodable(events) == [11, 12])
        #expect(tracker.counts.framesHeld == 1 && tracker.counts.framesSkipped == 0)
    }

    @Test func aFrameLostForGoodMakesTheDecoderWaitForAKeyframe() {
        var tracker = FrameTracker()
        _ = feed(&tracker, frame(100, 2, picture: 10, keyframe: true))
        // Frame 11 loses a packet for good; 12 and 13 are whole but depend on it.
        var events = feed(&tracker, Array(frame(102, 2, picture: 11).prefix(1)) + frame(104, 1, picture: 12) + frame(105, 1, picture: 13), now: 1_000)
        #expect(decodable(events).isEmpty)
        tracker.tick(now: 100_000_000, patience: 150_000_000, into: &events)
        #expect(events.isEmpty)  // still within NACK's time
        tracker.tick(now: 200_000_000, patience: 150_000_000, into: &events)
        #expect(events == [.keyframeWait] && tracker.awaitingKeyframe)
        events = feed(&tracker, frame(106, 1, picture: 14))
        #expect(decodable(events).isEmpty)
        events = feed(&tracker, frame(107, 3, picture: 15, keyframe: true))
        #expect(decodable(events) == [15] && !tracker.awaitingKeyframe)
        // 11, 12, 13 and 14 were never taken.
        #expect(tracker.counts.framesSkipped == 4 && tracker.counts.keyframeWaits == 1 && tracker.counts.keyframes == 2)
    }

    /// One packet frames of a stream of two temporal layers: (sequence, picture, TID, TL0PICIDX, keyframe).
    /// A keyframe declares `width` in its header.
    func layered(_ tracker: inout FrameTracker, _ frames: [(UInt16, UInt16, UInt8, UInt8, Bool)], width: Int = 0, now: UInt64 = 1_000) -> [FrameTracker.Event] {
        var events: [FrameTracker.Event] = []
        for (sequence, picture, tid, index, keyframe) in frames {
            let header: [UInt8] = keyframe && width > 0 ? [0x00, 0x00, 0x00, 0x9d, 0x01, 0x2a, UInt8(width & 0xFF), UInt8(width >> 8), 0x68, 0x01]
                                                        : [keyframe ? 0x00 : 0x01, 0x9d]
            let bytes: [UInt8] = [tid > 0 ? 0xB0 : 0x90, 0xE0, 0x80 | UInt8(picture >> 8), UInt8(picture & 0xFF), index, tid << 6 | (tid > 0 ? 0x20 : 0)] + header
            bytes.withUnsafeBytes { tracker.insert(sequence: sequence, timestamp: UInt32(picture) * 3000, marker: true, payload: $0, now: now, into: &events) }
        }
        return events
    }

    @Test func upperTemporalLayerFramesThatNeverComeAreNoLossButABaseLayerFrameIs() {
        var tracker = FrameTracker()
        // Both layers, then the base layer alone (Janus dropping TL1, its sequence numbers rewritten without gaps).
        var events = layered(&tracker, [(1, 10, 0, 250, true), (2, 11, 1, 250, false), (3, 12, 0, 251, false), (4, 13, 1, 251, false),
                                        (5, 14, 0, 252, false), (6, 16, 0, 253, false), (7, 18, 0, 254, false)])
        #expect(decodable(events) == [10, 11, 12, 13, 14, 16, 18])
        // An upper frame lost whole, and one of a base frame that came after it: neither is waited for.
        events = layered(&tracker, [(8, 20, 0, 255, false), (10, 22, 0, 0, false), (11, 23, 1, 0, false), (9, 21, 1, 255, false)])
        #expect(decodable(events) == [20, 22, 23])
        #expect(tracker.counts.framesSkipped == 0 && !tracker.awaitingKeyframe)
        tracker.tick(now: 1_000_000_000, patience: 150_000_000, into: &events)
        #expect(tracker.counts.keyframeWaits == 0)
        // A base-layer frame lost: the frames after it wait, and then the decoder waits for a keyframe.
        events = layered(&tracker, [(13, 25, 1, 1, false), (14, 26, 0, 2, false), (15, 27, 1, 2, false)])
        #expect(decodable(events).isEmpty)
        tracker.tick(now: 1_000_000_000, patience: 150_000_000, into: &events)
        #expect(events == [.keyframeWait] && tracker.counts.keyframeWaits == 1)
        events = layered(&tracker, [(16, 28, 0, 3, true), (17, 29, 1, 3, false)])
        #expect(decodable(events) == [28, 29] && tracker.counts.framesSkipped == 2)  // the base frames 1 and 2
        // A keyframe that repeats the last base frame's index, or goes back, skipped nothing (the lost count read 127 for it).
        events = layered(&tracker, [(18, 30, 0, 3, true), (19, 31, 0, 4, false), (20, 32, 0, 1, true)])
        #expect(decodable(events) == [30, 31, 32] && tracker.counts.framesSkipped == 2, "\(tracker.counts.framesSkipped)")
    }

    /// Janus switching a viewer to another simulcast layer cuts short the
    /// old layer's frame in flight and goes on with the new layer's keyframe
    /// (its TL0PICIDX rewritten to follow the last one it forwarded): the
    /// frame cut short is no loss. The same jump on one layer is, and so is
    /// one at a new size nobody asked to switch to.
    @Test(arguments: [(640, true, 0), (1280, true, 1), (640, false, 1)])
    func aKeyframeOfAnotherLayerJumpsPastTheFrameTheSwitchCutShort(width: Int, asked: Bool, skipped: UInt64) {
        var tracker = FrameTracker()
        if asked { tracker.substreamSwitched() }
        _ = layered(&tracker, [(1, 10, 0, 20, true)], width: 1280)
        _ = layered(&tracker, [(2, 11, 1, 20, false), (3, 12, 0, 21, false)])
        // Base frame 22 was cut short; the keyframe comes as TL0PICIDX 23.
        let events = layered(&tracker, [(5, 14, 0, 23, true)], width: width)
        #expect(decodable(events) == [14])
        #expect(tracker.counts.framesSkipped == skipped && tracker.counts.keyframes == 2)
    }
}
