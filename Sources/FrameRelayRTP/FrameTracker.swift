/// A VP8 RTP stream's frames, followed as a decoder would take them but
/// without decoding: packets become whole frames (every packet from the one
/// starting partition 0 to the marker, one timestamp), whole frames become
/// decodable in PictureID order (each frame refers to the one before it;
/// a keyframe refers to none), and a frame missing for longer than NACK can
/// bring it puts the decoder in a wait for the next keyframe.
///
/// A stream of temporal layers (RFC 7741's TID and TL0PICIDX) is followed
/// as libwebrtc's VP8 reference finder follows it: a base-layer frame
/// refers to the base-layer frame before it (TL0PICIDX one less), a frame
/// above refers to the base-layer frame of its TL0PICIDX (and, without Y,
/// to the frame before it), so a frame of an upper layer that never comes
/// (Janus drops them for a viewer of the base layer alone, or it was lost)
/// is no frame the decoder waits for.
///
/// No payload is kept: a slot per sequence number holds what the packet
/// said about its frame, so hundreds of subscribers cost a few kilobytes each.
package struct FrameTracker {
    package static let capacity = 1024
    /// The most complete frames held back waiting for an earlier one.
    package static let pendingLimit = 256

    private struct Slot {
        var present = false
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var marker = false
        var starts = false
        var keyframe = false
        var pictureID: UInt16 = 0
        var hasPictureID = false
        var temporalLayer: VP8TemporalLayer?
        var baseLayerIndex: UInt8?
        /// A keyframe's width, on its first packet.
        var width = 0
        /// Its VP8 data's size (the payload less its descriptor).
        var bytes: UInt16 = 0
        /// The frame it belongs to was already completed.
        var consumed = false
        var arrival: UInt64 = 0
    }

    /// A whole frame: where it starts, and what is known of it.
    package struct Frame: Equatable {
        package var firstSequence: UInt16
        package var packets: Int
        package var timestamp: UInt32
        package var pictureID: UInt16?
        package var keyframe: Bool
        package var temporalLayer: VP8TemporalLayer? = nil
        package var baseLayerIndex: UInt8? = nil
        /// A keyframe's width (0 for other frames).
        package var width = 0
        /// Its VP8 data's size, all packets together: the encoder's frame, byte for byte.
        package var bytes = 0
        /// When its first packet arrived and when it became whole (ns).
        package var firstArrival: UInt64
        package var completed: UInt64
    }

    /// What happened on a packet or a tick, for the subscriber to act on.
    package enum Event: Equatable {
        /// A frame the decoder can take now, in decode order.
        case decodable(Frame, at: UInt64)
        /// A frame was given up on: the decoder waits for a keyframe (ask for one).
        case keyframeWait
    }

    private var slots = [Slot](repeating: Slot(), count: capacity)
    /// The next PictureID the decoder can take; nil while it waits for a keyframe.
    private var expected: UInt16?
    private var pending: [UInt16: Frame] = [:]
    /// Since when the decoder has waited for the frame it expects while later ones are whole.
    private var waitingSince: UInt64?
    /// The last frame taken: its timestamp, and its PictureID.
    private var lastTimestamp: UInt32?
    private var lastPicture: UInt16?
    /// The TL0PICIDX of the last base-layer frame taken (a stream of temporal layers).
    private var lastBase: UInt8?
    /// The width of the last keyframe taken, and whether the viewer asked for
    /// another simulcast substream since: then a keyframe of another width is the new substream's.
    private var lastKeyframeWidth = 0
    private var switching = false
    /// The last frame that came whole.
    package private(set) var lastComplete: Frame?
    package private(set) var counts = Counts()

    package struct Counts: Equatable, Codable, Sendable {
        package var duplicates: UInt64 = 0
        package var framesComplete: UInt64 = 0
        package var framesDecodable: UInt64 = 0
        package var keyframes: UInt64 = 0
        /// Frames the decoder never took: lost, or whole but behind a keyframe it jumped to
        /// (not the frames of one layer a switch to another layer's keyframe cut short).
        package var framesSkipped: UInt64 = 0
        /// Whole frames that waited for an earlier one (NACK brought its missing packet in time).
        package var framesHeld: UInt64 = 0
        package var keyframeWaits: UInt64 = 0
        package var malformed: UInt64 = 0
    }

    /// The viewer asked to watch another simulcast substream (Janus switches at that substream's next keyframe).
    package mutating func substreamSwitched() { switching = true }

    /// Whether the decoder waits for a keyframe (before the first, or after a loss).
    package var awaitingKeyframe: Bool { expected == nil }

    package init() {}

    /// Takes one RTP packet's payload; returns what became decodable.
    package mutating func insert(sequence: UInt16, timestamp: UInt32, marker: Bool, payload: UnsafeRawBufferPointer, now: UInt64, into events: inout [Event]) {
        guard let descriptor = VP8PayloadDescriptor(payload) else {
            counts.malformed += 1
            return
        }
        let index = Int(sequence) % Self.capacity
        if slots[index].present, slots[index].sequence == sequence {
            counts.duplicates += 1
            return
        }
        slots[index] = Slot(present: true, sequence: sequence, timestamp: timestamp, marker: marker, starts: descriptor.startsFrame,
                            keyframe: descriptor.keyframe, pictureID: descriptor.pictureID ?? 0, hasPictureID: descriptor.pictureID != nil,
                            temporalLayer: descriptor.temporalLayer, baseLayerIndex: descriptor.baseLayerIndex,
                            width: descriptor.keyframe ? Self.keyframeWidth(payload, at: descriptor.dataOffset) : 0,
                            bytes: UInt16(clamping: payload.count - descriptor.dataOffset), consumed: false, arrival: now)
        if let frame = wholeFrame(containing: sequence, now: now) { complete(frame, now: now, into: &events) }
    }

    /// The width a keyframe's header declares (RFC 6386 §9.1: after the start code, 14 bits), 0 when cut short.
    private static func keyframeWidth(_ payload: UnsafeRawBufferPointer, at offset: Int) -> Int {
        guard payload.count >= offset + 8, payload[offset + 3] == 0x9d, payload[offset + 4] == 0x01, payload[offset + 5] == 0x2a else { return 0 }
        return Int(payload[offset + 6]) | Int(payload[offset + 7] & 0x3f) << 8
    }

    /// The frame `sequence` belongs to, when every packet of it is here and it was not completed before.
    private mutating func wholeFrame(containing sequence: UInt16, now: UInt64) -> Frame? {
        let timestamp = slots[Int(sequence) % Self.capacity].timestamp
        func slot(_ sequence: UInt16) -> Slot? {
            let slot = slots[Int(sequence) % Self.capacity]
            return slot.present && slot.sequence == sequence && slot.timestamp == timestamp && !slot.consumed ? slot : nil
        }
        var first = sequence
        var walked = 0
        while true {
            guard let here = slot(first) else { return nil }
            if here.starts { break }
            walked += 1
            guard walked < Self.capacity else { return nil }
            first &-= 1
        }
        var last = first, packets = 1, firstArrival = slots[Int(first) % Self.capacity].arrival, bytes = 0
        while true {
            guard let here = slot(last) else { return nil }
            firstArrival = min(firstArrival, here.arrival)
            bytes += Int(here.bytes)
            if here.marker { break }
            packets += 1
            guard packets < Self.capacity else { return nil }
            last &+= 1
        }
        for offset in 0..<packets { slots[Int(first &+ UInt16(offset)) % Self.capacity].consumed = true }
        let start = slots[Int(first) % Self.capacity]
        return Frame(firstSequence: first, packets: packets, timestamp: timestamp, pictureID: start.hasPictureID ? start.pictureID : nil,
                     keyframe: start.keyframe, temporalLayer: start.temporalLayer, baseLayerIndex: start.baseLayerIndex, width: start.width,
                     bytes: bytes, firstArrival: firstArrival, completed: now)
    }

    private mutating func complete(_ frame: Frame, now: UInt64, into events: inout [Event]) {
        counts.framesComplete += 1
        lastComplete = frame
        guard let picture = frame.pictureID else {
            // No PictureID (not our sender's packetizer): frames decode in timestamp order.
            if let last = lastTimestamp, Int32(bitPattern: frame.timestamp &- last) <= 0 { return }
            guard lastTimestamp != nil || frame.keyframe else { return }
            emit(frame, now: now, into: &events)
            return
        }
        _ = picture
        switch readiness(of: frame) {
        case .now: emit(frame, now: now, into: &events)
        case .later: hold(frame, now: now)
        case .never: break  // Behind what the decoder took: too late to matter.
        }
    }

    private enum Readiness { case now, later, never }

    /// Whether the decoder could take `frame` now, once an earlier frame comes, or never.
    private func readiness(of frame: Frame) -> Readiness {
        guard let picture = frame.pictureID else { return .never }
        guard let next = expected else { return frame.keyframe ? .now : .later }
        let ahead = (picture &- next) & 0x7FFF
        guard ahead < 0x4000 else { return .never }
        if frame.keyframe { return .now }
        if let layer = frame.temporalLayer, let index = frame.baseLayerIndex, let base = lastBase {
            // How far its base-layer frame is past the last one taken (0: that one).
            let step = index &- base
            if layer.id == 0 { return step == 1 ? .now : step == 0 || step >= 128 ? .never : .later }
            if step == 0 { return layer.sync || ahead == 0 ? .now : .later }
            return step < 128 ? .later : .never
        }
        return ahead == 0 ? .now : .later
    }

    /// Keeps a whole frame until the one before it is taken.
    private mutating func hold(_ frame: Frame, now: UInt64) {
        guard let picture = frame.pictureID, pending.count < Self.pendingLimit else { return }
        pending[picture] = frame
        if expected != nil, waitingSince == nil { waitingSince = now }
    }

    /// Hands out `frame` and every held frame that follows it.
    private mutating func emit(_ frame: Frame, now: UInt64, into events: inout [Event]) {
        var frame = frame
        while true {
            counts.framesDecodable += 1
            if frame.keyframe { counts.keyframes += 1 }
            if frame.completed < now { counts.framesHeld += 1 }
            lastTimestamp = frame.timestamp
            events.append(.decodable(frame, at: now))
            guard let picture = frame.pictureID else { return }
            // After a switch asked for, a keyframe of another width starts the new substream (Janus cut short
            // the old one's frame in flight): what it jumps past is no loss. A size change alone is no switch.
            let switched = switching && frame.keyframe && frame.width != 0 && lastKeyframeWidth != 0 && frame.width != lastKeyframeWidth
            if switched { switching = false }
            if frame.keyframe, frame.width != 0 { lastKeyframeWidth = frame.width }
            if switched {
                lastBase = frame.baseLayerIndex
            } else if let index = frame.baseLayerIndex, frame.temporalLayer?.id == 0 || frame.keyframe {
                // Base-layer frames between the last one taken and this one never will be (frames above it are no loss);
                // a keyframe that repeats the last index, or goes back, skipped none.
                if let base = lastBase, case let step = index &- base, step >= 1, step < 128 { counts.framesSkipped += UInt64(step - 1) }
                lastBase = index
            } else if frame.temporalLayer == nil, let last = lastPicture {
                // Frames between the last one taken and this one never will be.
                let gap = (picture &- last &- 1) & 0x7FFF
                if gap < 0x4000 { counts.framesSkipped += UInt64(gap) }
            }
            lastPicture = picture
            expected = (picture &+ 1) & 0x7FFF
            // Held frames the decoder has gone past are no longer needed (a keyframe jumped past them); the next one it can take, in order.
            for (id, held) in pending where readiness(of: held) == .never { pending[id] = nil }
            let ready = pending.values.filter { readiness(of: $0) == .now }
            guard let following = ready.min(by: { ($0.pictureID! &- expected!) & 0x7FFF < ($1.pictureID! &- expected!) & 0x7FFF }) else { break }
            pending[following.pictureID!] = nil
            frame = following
        }
        waitingSince = pending.isEmpty ? nil : now
    }

    /// Gives up on a missing frame that has kept the decoder waiting longer
    /// than `patience` (NACK had its chance): the decoder then waits for a
    /// keyframe, and takes one at once if one is whole already.
    package mutating func tick(now: UInt64, patience: UInt64, into events: inout [Event]) {
        guard let next = expected, let since = waitingSince, now &- since > patience else { return }
        expected = nil
        waitingSince = nil
        counts.keyframeWaits += 1
        events.append(.keyframeWait)
        let keyframes = pending.values.filter(\.keyframe)
        if let key = keyframes.min(by: { ($0.pictureID! &- next) & 0x7FFF < ($1.pictureID! &- next) & 0x7FFF }) {
            pending[key.pictureID!] = nil
            emit(key, now: now, into: &events)
        }
    }

    /// When ``tick(now:patience:into:)`` could next give up (nil: nothing is waited for).
    package var waitingSinceTime: UInt64? { waitingSince }
}
