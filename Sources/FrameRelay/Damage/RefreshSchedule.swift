internal import CYuv

/// Which macroblocks the encoder codes in each frame, so that a screen is
/// encoded only where it changed while still regions reach the quality that
/// encoding every frame reaches.
///
/// A macroblock that changed is coded, then kept in the active map while it
/// *refines*: libvpx keeps lowering the error of a still picture for many
/// frames after it stops changing (as its rate control lowers the quantizer
/// and its dead zone), so a region coded once and then left out freezes
/// several dB below what encoding every frame shows. A macroblock stops
/// refining once it has been coded ``settledFrames`` times at a quantizer of
/// at most ``convergedQuantizer`` since its last change, or once its error
/// against the encoder's reconstruction (what every decoder shows; luma and
/// chroma, measured every fourth time it is coded) is at most ``floorSSE``.
/// While the quantizer stays high (content changing elsewhere), a region
/// refines on, as it would in a stream encoding every frame.
///
/// When the screen comes to rest (``polishAfter`` frames with nothing
/// changed), every macroblock refines once more: encoding every frame keeps
/// polishing a resting screen, and regions that settled while the encoder
/// was busy elsewhere (a window dragged across) stayed 1.3–1.8 dB below it
/// without this pass (the `mixed` model's rest after its drag).
///
/// A frame with nothing changed and nothing refining is not encoded at all
/// (zero-hertz); a keyframe makes every macroblock refine again.
///
/// The constants are measured (`frame-relay-bench --filter content`, 720p,
/// 2.5 Mbit/s): a stopping rule on short stagnation (under 3 % better in 2
/// to 8 frames) or on the error alone (MSE 0.33) cost 1.5–3.5 dB on the
/// content models, because single macroblocks stall for several frames and
/// then improve again; 20 frames at a quantizer of 16 or less cost up to
/// 0.8 dB; 30 at 20 or less stays within 0.5 dB of encoding every frame.
/// Refining macroblocks on every second frame only (changed ones on every
/// frame) brought the shared clip from 1.09× to 1.18× less CPU but cost
/// 0.7–0.9 dB on the clip and every model, so every refining macroblock is
/// coded in every frame that is coded. A floor of 32 or 128 instead of 8
/// changed neither the clip's saving (1.09–1.10×) nor any model's PSNR by
/// more than 0.04 dB: few macroblocks reach it; the clip's refine until
/// their thirtieth coding at a low quantizer.
public struct RefreshSchedule {
    /// The squared error (luma and chroma, 384 samples) at which a macroblock counts as converged.
    public static let floorSSE: UInt64 = 8
    /// The quantizer (0–63) at or below which a coded frame counts towards convergence.
    public static let convergedQuantizer = 20
    /// Frames a macroblock is coded at that quantizer after its last change before it stops refining.
    public static let settledFrames = 30
    /// Still frames after which the whole screen refines once more.
    public static let polishAfter = 15

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
    private var refining: [Bool] = []
    private var settled: [UInt16] = []
    private var coded: [UInt16] = []
    /// Macroblocks refining now.
    public private(set) var refiningCount = 0
    /// Frames in a row with nothing changed; at ``polishAfter`` every macroblock refines once more.
    private var stillFrames = 0

    public init() {}

    /// Sizes the schedule for a picture of `columns × rows` macroblocks
    /// (everything refining when that is a new size) and clears the damage.
    public mutating func prepare(columns: Int, rows: Int) {
        if columns != self.columns || rows != self.rows {
            self.columns = columns
            self.rows = rows
            let count = columns * rows
            changed = Array(repeating: 0, count: count)
            activeMap = Array(repeating: 1, count: count)
            refining = Array(repeating: true, count: count)
            settled = Array(repeating: 0, count: count)
            coded = Array(repeating: 0, count: count)
            refiningCount = count
        } else {
            changed.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
    }

    /// Calls `body` with the damage map to fill (one byte per macroblock, 1: changed).
    public mutating func withDamage<R>(_ body: (UnsafeMutablePointer<UInt8>) throws -> R) rethrows -> R {
        try changed.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
    }

    /// The plan for a frame whose damage is filled in, `keyframe` when the
    /// encoder will make a keyframe of it.
    public mutating func plan(keyframe: Bool) -> Plan {
        if changed.contains(1) {
            stillFrames = 0
        } else {
            stillFrames += 1
            // The screen has come to rest: polish it whole, as encoding every frame keeps doing.
            if stillFrames == Self.polishAfter { restart() }
        }
        var active = 0
        for i in changed.indices {
            if changed[i] != 0 {
                if !refining[i] {
                    refining[i] = true
                    refiningCount += 1
                }
                settled[i] = 0
                coded[i] = 0
            }
            let on: UInt8 = refining[i] ? 1 : 0
            activeMap[i] = on
            active += Int(on)
        }
        if keyframe || DamageDetector.isWholeFrame(active, of: changed.count) { return .everything }
        return active == 0 ? .skip : .some(active)
    }

    /// Calls `body` with the active map for the encoder.
    public mutating func withActiveMap<R>(_ body: (UnsafeMutablePointer<UInt8>) throws -> R) rethrows -> R {
        try activeMap.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
    }

    /// After a keyframe: every macroblock refines from it.
    public mutating func restart() {
        for i in refining.indices {
            refining[i] = true
            settled[i] = 0
            coded[i] = 0
        }
        refiningCount = refining.count
    }

    /// After a frame was coded at `quantizer`: measures each refining
    /// macroblock that did not change in this frame against the encoder's
    /// reconstruction and lets those that converged go.
    /// `measure`: false after a frame coded whole, when the error floor is
    /// left for a later partial frame (content busy enough to code whole
    /// frames gains nothing from stopping a macroblock early).
    mutating func converge(source: EncoderInput, reconstruction: EncoderInput, quantizer: Int, measure: Bool) {
        for row in 0..<rows {
            for column in 0..<columns {
                let i = row * columns + column
                guard refining[i], changed[i] == 0 else { continue }
                coded[i] &+= 1
                if quantizer <= Self.convergedQuantizer { settled[i] &+= 1 }
                // The floor is measured every fourth frame a macroblock is coded: it lets flat regions go early, cheaply.
                if Int(settled[i]) >= Self.settledFrames || (measure && coded[i] % 4 == 0 && Self.sse(source, reconstruction, column: column, row: row) <= Self.floorSSE) {
                    refining[i] = false
                    refiningCount -= 1
                }
            }
        }
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
