internal import CYuv
import Glibc

/// Which macroblocks the encoder codes in each frame, and how finely, so
/// that a screen is encoded only where it changed while still regions reach
/// at least the quality that encoding every frame reaches.
///
/// A macroblock that changed is coded at the frame's quantizer, then kept in
/// the active map while it *refines*. Its first ``refineAfter`` codings
/// after the change are at the frame's quantizer too; later ones are in the
/// *refine segment*, ``refineDelta`` finer (a VP8 segment of its own), so a
/// region that came to rest gets its detail in one or two codings instead
/// of the 20–30 that libvpx's own cyclic refresh and its slowly falling
/// quantizer take. A macroblock stops refining once it has been coded
/// ``settledFrames`` times at a frame quantizer of at most
/// ``convergedQuantizer`` since its last change, or once its error against
/// the encoder's reconstruction (what every decoder shows; luma and chroma,
/// measured every fourth time it is coded) is at most ``floorSSE``. While
/// the quantizer stays high (content changing elsewhere), a region refines on.
///
/// When the screen comes to rest (``polishAfter`` frames with nothing
/// changed), every macroblock refines once more, for regions that settled
/// while the encoder was busy elsewhere (a window dragged across).
///
/// A macroblock the active map leaves out is in the *kept* segment, which
/// libvpx does not loop-filter, unless it is right of or below a coded one
/// (VP8 filters a macroblock's left and top edges with it). Only while at
/// most 1 in ``keptAtMost`` macroblocks is coded: the map costs bits.
///
/// A frame with nothing changed and nothing refining is not encoded at all
/// (zero-hertz); a keyframe makes every macroblock refine again.
///
/// A lower simulcast layer *sweeps* (``sweeps``): the macroblocks that
/// refine a keyframe's picture are coded a *band* at a time (the next ones
/// in raster order), each once, at the finest quantizer and not
/// loop-filtered (``VP8Encoder/Segment/band``), while the others wait; a
/// band is sized from what the last one cost to what the layer's bitrate
/// leaves (``bandAllowance``, from its ``SweepBudget``). A keyframe's
/// picture so refines in a few frames of bounded size instead of 20 that
/// each code it whole as the quantizer falls (docs/STREAMING.md: at
/// 640×360 on a still screen, 18 frames against 20, 81 KB against 89, and
/// a finer picture), and libvpx's work on the frames, which is mostly per
/// frame and per macroblock coded, falls with them. A macroblock a band
/// refined stays out of every polish until it changes. A change, and a
/// polish, refine as the top's do, at each base frame until they converge.
/// A large change (``Simulcast/motionShare``) ends the sweep: what still
/// waited for its band stops refining until the polish (``calmFrames``,
/// `endSweep`); polished in bands too, the scrolling model's small layer
/// came to 579 kbit/s against 508.
///
/// Every constant is measured: what each choice cost or saved, and the
/// command that measures it, are in docs/ENCODING.md ("How the constants
/// were set").
public struct RefreshSchedule {
    /// The squared error (luma and chroma, 384 samples) at which a macroblock counts as converged.
    public static let floorSSE: UInt64 = 8
    /// The frame quantizer (0–63) at or below which a coded frame counts towards convergence.
    public static let convergedQuantizer = 20
    /// Frames a macroblock is coded at that quantizer after its last change before it stops refining.
    public static let settledFrames = 2
    /// Codings at the frame's quantizer after a change before a macroblock moves to the refine segment.
    public static let refineAfter = 1
    /// The refine segment's quantizer against the frame's (libvpx's 0–63 scale).
    public static let refineDelta = -16
    /// The kept segment is used while at most 1 in this many macroblocks is coded.
    public static let keptAtMost = 8
    /// Still frames after which the whole screen refines once more.
    public static let polishAfter = 15
    /// Frames planned since the last large change (``Simulcast/motionShare``)
    /// before a keyframe is swept: on a screen that scrolls every few
    /// seconds the sweep would end at the next scroll, and the keyframe
    /// refines as the top's does (swept, the scrolling model's small-layer
    /// viewers on a free link froze 5.3–14.7 times a minute against 3.2–4.2
    /// in load tests interleaved with sweeps off; docs/STREAMING.md).
    public static let calmFrames = 30

    /// What to do with one frame.
    public enum Plan: Equatable {
        /// Nothing changed and everything converged: do not encode (zero-hertz).
        case skip
        /// Code every macroblock (no active map).
        case everything
        /// Code the macroblocks marked in ``activeMap`` (this many).
        case some(Int)
    }

    public private(set) var columns = 0
    public private(set) var rows = 0
    /// This frame's damage, filled by a ``DamageDetector``.
    private(set) var changed: [UInt8] = []
    /// The map handed to the encoder: changed or refining.
    private(set) var activeMap: [UInt8] = []
    /// Each macroblock's segment (``VP8Encoder/Segment``): the refine
    /// segment for those refining and unchanged for ``refineAfter`` codings,
    /// kept for those the active map leaves out (not loop-filtered again),
    /// band for a sweep's band (``sweeps``).
    private(set) var segmentMap: [UInt8] = []
    /// Whether this frame uses ``segmentMap`` (a frame coded whole with nothing refining does not).
    private var segmented = false
    /// How many macroblocks are in the refine segment in this frame.
    public private(set) var refineCount = 0
    /// Whether the maps code nothing (set by a skipped frame's shortcut).
    private var mapsKeepAll = false
    private var refining: [Bool] = []
    private var settled: [UInt16] = []
    private var coded: [UInt16] = []
    /// Macroblocks refining now.
    public private(set) var refiningCount = 0
    /// Frames in a row with nothing changed; at ``polishAfter`` every macroblock refines once more.
    private var stillFrames = 0
    /// With temporal layers: the macroblocks changed since the last base-layer frame (what an upper-layer frame codes).
    private var sinceBase: [UInt8] = []
    /// Whether the schedule sweeps (a lower simulcast layer's).
    public var sweeps = false
    /// Sweeping, the bytes this frame's band may cost (set before each ``plan(keyframe:)``), and the most it ever may.
    var bandAllowance = 0
    var bandBytesMost = Int.max
    /// Whether the last base frame coded its band alone (its bytes are the band's).
    private var bandOnly = false
    /// The macroblocks in this frame's band, and where the next band starts.
    private var band: [Bool] = []
    /// Whether `band` marks any macroblock.
    private var bandMarked = false
    private var bandStart = 0
    /// How many macroblocks are in this frame's band.
    public private(set) var bandCount = 0
    /// What a band's macroblock cost (bytes), from the last band; a keyframe's sets the first.
    private var bandMacroblockBytes = 0.0
    /// The macroblocks a band refined since they last changed: a polish leaves them be.
    private var swept: [Bool] = []
    /// The macroblocks that refine a keyframe's picture and wait for their
    /// band; one that changed since, or a polish's, refines at each base
    /// frame, as the top's do.
    private var awaitsBand: [Bool] = []
    /// Frames planned since the last large change (``calmFrames``).
    private var framesSinceLargeChange = calmFrames

    public init() {}

    /// Sizes the schedule for a picture of `columns × rows` macroblocks
    /// (everything refining when that is a new size) and clears the damage
    /// (unless `keepingDamage`: what a frame left to a later one changed still counts).
    public mutating func prepare(columns: Int, rows: Int, keepingDamage: Bool = false) {
        if columns != self.columns || rows != self.rows {
            self.columns = columns
            self.rows = rows
            let count = columns * rows
            changed = Array(repeating: 0, count: count)
            activeMap = Array(repeating: 1, count: count)
            segmentMap = Array(repeating: VP8Encoder.Segment.coded, count: count)
            refining = Array(repeating: true, count: count)
            sinceBase = Array(repeating: 1, count: count)
            band = Array(repeating: false, count: count)
            swept = Array(repeating: false, count: count)
            awaitsBand = Array(repeating: false, count: count)
            bandStart = 0
            settled = Array(repeating: 0, count: count)
            coded = Array(repeating: 0, count: count)
            refiningCount = count
        } else if !keepingDamage {
            changed.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
    }

    /// Whether this frame's damage marks any macroblock.
    var anyChanged: Bool { changed.withUnsafeBufferPointer { memchr($0.baseAddress!, 1, $0.count) != nil } }

    /// Macroblocks this frame's damage marks.
    var changedCount: Int { anyChanged ? changed.reduce(0) { $0 + Int($1) } : 0 }

    /// Macroblocks changed since the last base-layer frame (after this
    /// frame's plan): what differs from the picture a frame references.
    var sinceBaseCount: Int { sinceBase.reduce(0) { $0 + Int($1) } }

    /// Calls `body` with the damage map to fill (one byte per macroblock, 1: changed).
    public mutating func withDamage<R>(_ body: (UnsafeMutablePointer<UInt8>) throws -> R) rethrows -> R {
        try changed.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
    }

    /// Marks as changed each macroblock of this schedule's picture that
    /// covers one `source` marks in its picture, `scale` times as wide and
    /// high (a lower simulcast layer takes the whole picture's damage); those
    /// marked already stay marked.
    mutating func takeDamage(from source: RefreshSchedule, scale: Double) {
        guard source.anyChanged else { return }
        // The source macroblocks under one of ours, along one axis.
        func span(_ block: Int, _ limit: Int) -> ClosedRange<Int> {
            let first = min(limit - 1, Int(Double(block * 16) * scale) / 16)
            return first...min(limit - 1, max(first, (Int((Double(block * 16 + 16) * scale).rounded(.up)) - 1) / 16))
        }
        for row in 0..<rows {
            let sourceRows = span(row, source.rows)
            // A row over source rows with nothing changed (most of them, typing) is passed over whole.
            let touched = source.changed.withUnsafeBufferPointer { marks in
                sourceRows.contains { memchr(marks.baseAddress! + $0 * source.columns, 1, source.columns) != nil }
            }
            guard touched else { continue }
            for column in 0..<columns {
                guard changed[row * columns + column] == 0 else { continue }
                let sourceColumns = span(column, source.columns)
                let marked = sourceRows.contains { r in sourceColumns.contains { source.changed[r * source.columns + $0] != 0 } }
                changed[row * columns + column] = marked ? 1 : 0
            }
        }
    }

    /// Each macroblock row: whether this frame's damage touches it (after ``noteChangedRows()``).
    private(set) var changedRows: [Bool] = []

    /// Fills ``changedRows`` from this frame's damage, in place (no allocation once sized).
    mutating func noteChangedRows() {
        if changedRows.count != rows { changedRows = Array(repeating: false, count: rows) }
        for row in 0..<rows { changedRows[row] = changed[(row * columns)..<((row + 1) * columns)].contains(1) }
    }

    /// The plan for a frame of the upper temporal layer whose damage is
    /// filled in: only the macroblocks changed since the last base-layer
    /// frame, at the frame's quantizer (so a viewer of both layers sees each
    /// change at once); nothing refines in it (no frame references an upper
    /// one: the refinement would be lost). What changed refines from the
    /// next base-layer frame on; nothing changed since the last one: skip.
    public mutating func planUpper() -> Plan {
        var active = 0, changedNow = 0
        framesSinceLargeChange = min(framesSinceLargeChange + 1, Self.calmFrames)
        for i in changed.indices {
            if changed[i] != 0 {
                sinceBase[i] = 1
                markChanged(i)
                changedNow += 1
            }
            activeMap[i] = sinceBase[i]
            active += Int(sinceBase[i])
        }
        endSweep(changed: changedNow)
        mapsKeepAll = false
        segmented = false
        refineCount = 0
        bandCount = 0
        if active == 0 { return .skip }
        return DamageDetector.isWholeFrame(active, of: changed.count) ? .everything : .some(active)
    }

    /// A base-layer frame was encoded: the upper layer's next frames code only what changes from it.
    public mutating func baseEncoded() {
        sinceBase.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    }

    /// The plan for a frame whose damage is filled in, `keyframe` when the
    /// encoder will make a keyframe of it.
    public mutating func plan(keyframe: Bool) -> Plan {
        (bandCount, bandOnly) = (0, false)
        framesSinceLargeChange = min(framesSinceLargeChange + 1, Self.calmFrames)
        let still = !anyChanged
        if !still { for i in changed.indices where changed[i] != 0 { sinceBase[i] = 1 } }
        if still {
            stillFrames += 1
            // The screen has come to rest: polish it whole, as encoding every frame keeps doing.
            if stillFrames == Self.polishAfter { restart(polish: true) }
        } else {
            stillFrames = 0
        }
        // Converged and still (zero-hertz): no pass over the macroblocks; the
        // maps are cleared once, for the empty frames sent over RTP.
        if still, refiningCount == 0, !keyframe {
            if !mapsKeepAll {
                activeMap.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
                segmentMap.withUnsafeMutableBufferPointer { $0.update(repeating: VP8Encoder.Segment.kept) }
                refineCount = 0
                segmented = true
                mapsKeepAll = true
            }
            return .skip
        }
        mapsKeepAll = false
        var active = 0, changedNow = 0
        refineCount = 0
        for i in changed.indices where changed[i] != 0 {
            markChanged(i)
            changedNow += 1
        }
        if !keyframe { endSweep(changed: changedNow) }
        let sweeping = sweeps && !keyframe
        if sweeping { chooseBand() }
        for i in changed.indices {
            let column = i % columns
            // Sweeping, a macroblock at rest that refines a keyframe's picture waits for its band.
            let waits = sweeping && awaitsBand[i] && refining[i] && changed[i] == 0 && !band[i]
            activeMap[i] = refining[i] && !waits ? 1 : 0
            active += Int(activeMap[i])
            if activeMap[i] == 0 {
                // VP8 filters a macroblock's left and top edges with the macroblock: one right of or
                // below a coded one keeps its filter, as encoding every frame filters that edge.
                // A band's macroblock is not filtered (``VP8Encoder/Segment/band``), nor are its edges.
                func filtered(_ j: Int) -> Bool { activeMap[j] != 0 && !(sweeping && band[j]) }
                let edge = (column > 0 && filtered(i - 1)) || (i >= columns && filtered(i - columns))
                segmentMap[i] = edge ? VP8Encoder.Segment.coded : VP8Encoder.Segment.kept
            } else if sweeping && band[i] {
                segmentMap[i] = VP8Encoder.Segment.band
            } else if changed[i] == 0, Int(coded[i]) >= Self.refineAfter {
                segmentMap[i] = VP8Encoder.Segment.refine
                refineCount += 1
            } else {
                segmentMap[i] = VP8Encoder.Segment.coded
            }
        }
        bandOnly = bandCount > 0 && active == bandCount
        let whole = keyframe || DamageDetector.isWholeFrame(active, of: changed.count)
        segmented = true
        if whole || active * Self.keptAtMost > changed.count {
            // Coded whole or widely: nothing is kept (the map's bits, about 0.8 a macroblock
            // with a quarter coded, cost more than the filter saves), and without anything
            // refining there are no segments at all.
            // With a band, what is kept stays kept: its neighbours would filter the band's edges at the frame's level.
            segmented = refineCount > 0 || bandCount > 0
            if segmented, bandCount == 0 {
                for i in segmentMap.indices where segmentMap[i] == VP8Encoder.Segment.kept { segmentMap[i] = VP8Encoder.Segment.coded }
            }
        }
        if whole { return .everything }
        return active == 0 ? .skip : .some(active)
    }

    /// Sweeping: marks this frame's band, the next macroblocks at rest that
    /// refine a keyframe's picture from where the last band ended, as many
    /// as ``bandAllowance`` pays for at what the last band's cost (none
    /// while it pays for none, or before a keyframe has set that cost).
    private mutating func chooseBand() {
        // At most a third of the picture: with what else refines, a frame over two thirds is coded whole, waiting macroblocks too.
        let size = bandMacroblockBytes > 0 ? min(Int(Double(bandAllowance) / bandMacroblockBytes), changed.count / 3) : 0
        // No band: the last one's marks cleared once, not a pass over the picture every frame.
        guard size > 0 else {
            if bandMarked { band.withUnsafeMutableBufferPointer { $0.update(repeating: false) } }
            bandMarked = false
            return
        }
        var taken = 0, i = bandStart % changed.count
        for _ in changed.indices {
            band[i] = taken < size && refining[i] && changed[i] == 0 && awaitsBand[i]
            if band[i] {
                taken += 1
                bandStart = i + 1
            }
            i = i + 1 == changed.count ? 0 : i + 1
        }
        bandCount = taken
        bandMarked = taken > 0
    }

    /// Macroblock `i` changed: it refines from its next coding on, as a change does (not in a sweep's band).
    private mutating func markChanged(_ i: Int) {
        if !refining[i] {
            refining[i] = true
            refiningCount += 1
        }
        settled[i] = 0
        coded[i] = 0
        swept[i] = false
        awaitsBand[i] = false
    }

    /// A large change (a scroll: ``Simulcast/motionShare`` of the
    /// macroblocks, `changed` of them in this frame) ends the sweep: what
    /// waited for its band stops refining, at the keyframe's quality, until
    /// the polish when the screen comes to rest. Refining it all from the
    /// next base frame coded the whole picture in one frame at a quantizer
    /// the silence before had let fall (a scroll after a keyframe: 16–27 KB
    /// at 640×360 against 2–5 KB, and through Janus a 1 Mbit/s link's
    /// viewers saw 40.9–43.0 ms, p50, against 36.7–38.8).
    private mutating func endSweep(changed count: Int) {
        guard sweeps, count * Simulcast.motionShare >= changed.count else { return }
        framesSinceLargeChange = 0
        for i in awaitsBand.indices where awaitsBand[i] {
            awaitsBand[i] = false
            if refining[i] {
                refining[i] = false
                refiningCount -= 1
            }
        }
    }

    /// Calls `body` with the active map for the encoder and the segment map
    /// (nil when the frame uses no segments).
    public mutating func withMaps<R>(_ body: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>?) throws -> R) rethrows -> R {
        let segmented = segmented
        return try activeMap.withUnsafeMutableBufferPointer { active in
            try segmentMap.withUnsafeMutableBufferPointer { segments in try body(active.baseAddress!, segmented ? segments.baseAddress! : nil) }
        }
    }

    /// After a keyframe: every macroblock refines from it (sweeping, each
    /// waits for its band, from the top of the picture: the keyframe coded
    /// it at the frame's quantizer).
    /// `polish`: the screen came to rest; a macroblock a band refined stays
    /// refined, one waiting for its band still waits, and the others refine
    /// at each base frame, as the top's do.
    public mutating func restart(polish: Bool = false) {
        let sweeping = sweeps && !polish && framesSinceLargeChange >= Self.calmFrames
        for i in refining.indices where !(polish && (swept[i] || awaitsBand[i])) {
            if !refining[i] { refiningCount += 1 }
            refining[i] = true
            settled[i] = 0
            coded[i] = sweeping ? UInt16(Self.refineAfter) : 0
            swept[i] = false
            awaitsBand[i] = sweeping
        }
        if !polish { bandStart = 0 }
    }

    /// After a frame was coded at `quantizer`: measures each refining
    /// macroblock that did not change in this frame against the encoder's
    /// reconstruction and lets those that converged go.
    /// `measure`: false after a frame coded whole, when the error floor is
    /// left for a later partial frame (content busy enough to code whole
    /// frames gains nothing from stopping a macroblock early).
    public mutating func converge(source: EncoderInput, reconstruction: EncoderInput, quantizer: Int, measure: Bool) {
        for row in 0..<rows {
            for column in 0..<columns {
                let i = row * columns + column
                guard refining[i], changed[i] == 0, !sweeps || activeMap[i] != 0 else { continue }
                // A band's macroblock, coded at the finest quantizer, is refined.
                if bandCount > 0, segmentMap[i] == VP8Encoder.Segment.band {
                    refining[i] = false
                    refiningCount -= 1
                    swept[i] = true
                    awaitsBand[i] = false
                    continue
                }
                coded[i] &+= 1
                if quantizer <= Self.convergedQuantizer { settled[i] &+= 1 }
                // The floor is measured every fourth frame a macroblock is coded: it lets flat regions go early, cheaply.
                if Int(settled[i]) >= Self.settledFrames || (measure && coded[i] % 4 == 0 && Self.sse(source, reconstruction, column: column, row: row) <= Self.floorSSE) {
                    refining[i] = false
                    refiningCount -= 1
                    awaitsBand[i] = false
                }
            }
        }
    }

    /// Sweeping, after a base-layer frame of `bytes`: what its band's
    /// macroblocks cost, for the next band's size (a keyframe's cost a
    /// macroblock, four times over as the finest quantizer's, sets the first;
    /// learnt only from a frame that coded its band alone; it falls by at
    /// most a tenth a band, so a band of flat macroblocks is not followed by
    /// one of text five times its size; never over ``bandBytesMost``, so a
    /// full bucket always pays for a macroblock).
    mutating func noteBand(bytes: Int, keyframe: Bool) {
        guard sweeps else { return }
        if keyframe {
            bandMacroblockBytes = 4 * Double(bytes) / Double(changed.count)
        } else if bandOnly {
            bandMacroblockBytes = max(bandMacroblockBytes * 0.9, Double(bytes) / Double(bandCount))
        }
        bandMacroblockBytes = min(bandMacroblockBytes, Double(bandBytesMost))
    }

    /// The squared error of one macroblock, luma and both chroma planes,
    /// between a picture (I420 or NV12) and the reconstruction (I420).
    static func sse(_ source: EncoderInput, _ reconstruction: EncoderInput, column: Int, row: Int) -> UInt64 {
        let x = column * 16, y = row * 16
        let width = min(16, source.width - x), height = min(16, source.height - y)
        var sse = ComputeSumSquareErrorPlane(
            source.plane(0) + y * source.stride(0) + x, Int32(source.stride(0)),
            reconstruction.plane(0) + y * reconstruction.stride(0) + x, Int32(reconstruction.stride(0)), Int32(width), Int32(height))
        let cx = x / 2, cy = y / 2, cw = (width + 1) / 2, ch = (height + 1) / 2
        if source.format == .i420 {
            for plane in 1...2 {
                sse += ComputeSumSquareErrorPlane(
                    source.plane(plane) + cy * source.stride(plane) + cx, Int32(source.stride(plane)),
                    reconstruction.plane(plane) + cy * reconstruction.stride(plane) + cx, Int32(reconstruction.stride(plane)), Int32(cw), Int32(ch))
            }
        } else {
            // NV12: U and V interleaved in the source, planar in the reconstruction.
            for r in 0..<ch {
                let pairs = source.plane(1) + (cy + r) * source.stride(1) + 2 * cx
                let u = reconstruction.plane(1) + (cy + r) * reconstruction.stride(1) + cx
                let v = reconstruction.plane(2) + (cy + r) * reconstruction.stride(2) + cx
                for c in 0..<cw {
                    let du = Int(pairs[2 * c]) - Int(u[c]), dv = Int(pairs[2 * c + 1]) - Int(v[c])
                    sse += UInt64(du * du + dv * dv)
                }
            }
        }
        return sse
    }
}
