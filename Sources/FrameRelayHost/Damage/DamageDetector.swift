@preconcurrency import Glibc
import FrameRelayFrames

/// Finds which 16×16 macroblocks of a picture differ from the picture before
/// it, by comparing it with a kept copy of that picture:
/// whole rows first (one `memcmp` each, as fast as memory reads), then, only
/// in rows that differ, each macroblock's bytes; a differing row is copied
/// into the kept picture. An unchanged 720p NV12 picture costs one read of
/// both pictures; nothing is allocated per frame.
///
/// iOS hands a broadcast extension no damage at all, so the host finds it
/// alone, on the picture the encoder is about to read (after any
/// conversion, rotation or scaling). A producer that knows a frame repeats
/// the one before (a still content model; ``FrameMetadata/picture``) says
/// so, and the host takes the kept picture as it is (``heldPicture(for:)``):
/// no conversion, no compare. One that knows where a frame changed says
/// that (``FrameMetadata/changed``), and only that region is compared
/// (``changes(in:)``).
public final class DamageDetector {
    private var previous: PixelBuffer?
    /// The producer's name for the kept picture and the geometry it came
    /// in (a name is only trusted again at the same size, format and
    /// orientation); nil when it gave none.
    private var keptName: (picture: UInt64, width: Int, height: Int, format: PixelFormat, orientation: Orientation)?
    /// Macroblocks across and down the last picture compared.
    public private(set) var columns = 0
    public private(set) var rows = 0

    public init() {}

    /// Whether `count` of `total` macroblocks is enough to code the whole
    /// frame: past two thirds, an active map saves libvpx nothing worth its bookkeeping.
    public static func isWholeFrame(_ count: Int, of total: Int) -> Bool { count * 3 >= total * 2 }

    /// The kept picture, when it is the one the producer names in `frame`
    /// (``FrameMetadata/picture``; 0 names none), in the same geometry: then
    /// the frame changed nothing, and the kept picture is what its
    /// conversion would have made (valid until the next compare). Nil
    /// otherwise.
    public func heldPicture(for frame: FrameMetadata) -> EncoderInput? {
        guard frame.picture != 0, let previous, let kept = keptName,
              kept == (frame.picture, frame.width, frame.height, frame.format, frame.orientation) else { return nil }
        return EncoderInput(previous)
    }

    /// The kept picture: the last one compared, whole (valid until the next compare).
    public var keptPicture: EncoderInput? { previous.map(EncoderInput.init) }

    /// The region the producer says `frame` changed in, when the kept
    /// picture is the one it says the frame changed from, in the same
    /// geometry, upright (a region is in the frame's own coordinates);
    /// nil otherwise: then the whole picture is compared.
    public func changes(in frame: FrameMetadata) -> PixelRegion? {
        guard frame.changedSince != 0, frame.orientation == .up, previous != nil, let kept = keptName else { return nil }
        return kept == (frame.changedSince, frame.width, frame.height, frame.format, frame.orientation) ? frame.changed : nil
    }

    /// What a compare found: how many macroblocks it newly marked, and the
    /// whole picture as now kept (valid until the next compare), which is
    /// what to encode when only a region was converted.
    public struct Comparison {
        public var marked: Int
        public var picture: EncoderInput
    }

    /// Marks each macroblock of `input` that differs from the last picture
    /// with 1 in `changed` (`rows × columns` bytes, left as they are
    /// elsewhere), and keeps `input`'s picture. The first picture,
    /// and one of a new size or format, is all changed. Once the luma shows
    /// a whole frame's worth of change (``isWholeFrame(_:of:)``), the rest is
    /// only copied, not compared, and every macroblock counts as changed: the
    /// frame is coded whole anyway. `source` is the frame `input` was made
    /// from: its producer's name for the picture is kept for ``heldPicture(for:)``.
    /// `region`: the producer said the picture differs from the kept one
    /// only there (``changes(in:)``); nothing outside it is compared.
    public func compare(_ input: EncoderInput, source: FrameMetadata? = nil, region: PixelRegion? = nil, into changed: UnsafeMutablePointer<UInt8>) throws -> Comparison {
        keptName = nil
        let count: Int
        if let region, let previous, previous.width == input.width, previous.height == input.height, previous.format == input.format {
            count = update(input, region: region, kept: previous, into: changed)
        } else {
            count = try update(input, into: changed)
        }
        if let s = source, s.picture != 0 { keptName = (s.picture, s.width, s.height, s.format, s.orientation) }
        return Comparison(marked: count, picture: EncoderInput(previous!))
    }

    /// Brings the kept picture up to `input`, marking what differed.
    private func update(_ input: EncoderInput, into changed: UnsafeMutablePointer<UInt8>) throws -> Int {
        let columns = (input.width + 15) / 16, rows = (input.height + 15) / 16
        guard let previous, previous.width == input.width, previous.height == input.height, previous.format == input.format else {
            let copy = try PixelBuffer(width: input.width, height: input.height, format: input.format)
            self.previous = copy
            self.columns = columns
            self.rows = rows
            for plane in 0..<input.format.planeCount { copyPlane(input, plane, into: copy) }
            changed.update(repeating: 1, count: columns * rows)
            return columns * rows
        }
        var count = 0
        for plane in 0..<input.format.planeCount {
            // Luma: 16 bytes × 16 rows per macroblock; chroma: 8 × 8 (I420) or 16 × 8 (NV12's interleaved pairs).
            let chroma = plane > 0
            let (marked, whole) = comparePlane(
                input.plane(plane), input.stride(plane), previous.plane(plane).assumingMemoryBound(to: UInt8.self), previous.stride(plane),
                rowBytes: input.format.rowBytes(plane: plane, width: input.width), height: input.format.rows(plane: plane, height: input.height),
                blockBytes: chroma && input.format == .i420 ? 8 : 16, blockRows: chroma ? 8 : 16, changed: changed, columns: columns, blocks: columns,
                giveUpAt: chroma ? nil : (2 * columns * rows + 2) / 3)
            count += marked
            if whole {
                for rest in (plane + 1)..<input.format.planeCount { copyPlane(input, rest, into: previous) }
                var newly = 0
                for i in 0..<(columns * rows) where changed[i] == 0 {
                    changed[i] = 1
                    newly += 1
                }
                return count + newly
            }
        }
        return count
    }

    /// Brings the kept picture up to `input` inside `region` only, marking what differed there.
    private func update(_ input: EncoderInput, region: PixelRegion, kept: PixelBuffer, into changed: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        for i in 0..<region.count {
            let blocks = region[i].macroblocks(width: input.width, height: input.height)
            guard blocks.columns > 0, blocks.rows > 0 else { continue }
            for plane in 0..<input.format.planeCount {
                let chroma = plane > 0
                let blockBytes = chroma && input.format == .i420 ? 8 : 16, blockRows = chroma ? 8 : 16
                let x = blocks.column * blockBytes, y = blocks.row * blockRows
                let rowBytes = min(input.format.rowBytes(plane: plane, width: input.width) - x, blocks.columns * blockBytes)
                let height = min(input.format.rows(plane: plane, height: input.height) - y, blocks.rows * blockRows)
                let keptPlane = kept.plane(plane).assumingMemoryBound(to: UInt8.self)
                count += comparePlane(
                    input.plane(plane) + y * input.stride(plane) + x, input.stride(plane), keptPlane + y * kept.stride(plane) + x, kept.stride(plane),
                    rowBytes: rowBytes, height: height, blockBytes: blockBytes, blockRows: blockRows,
                    changed: changed + blocks.row * columns + blocks.column, columns: columns, blocks: blocks.columns, giveUpAt: nil).marked
            }
        }
        return count
    }

    private func comparePlane(
        _ current: UnsafePointer<UInt8>, _ currentStride: Int, _ kept: UnsafeMutablePointer<UInt8>, _ keptStride: Int,
        rowBytes: Int, height: Int, blockBytes: Int, blockRows: Int, changed: UnsafeMutablePointer<UInt8>, columns: Int, blocks: Int, giveUpAt: Int?
    ) -> (marked: Int, whole: Bool) {
        var count = 0
        for y in 0..<height {
            let a = current + y * currentStride, b = kept + y * keptStride
            if let giveUpAt, y % blockRows == 0, count >= giveUpAt {
                // A whole frame's worth changed: copy the rest of the plane, compare no more.
                for rest in y..<height { (kept + rest * keptStride).update(from: current + rest * currentStride, count: rowBytes) }
                return (count, true)
            }
            if memcmp(a, b, rowBytes) == 0 { continue }
            let marks = changed + (y / blockRows) * columns
            if !UnsafeBufferPointer(start: marks, count: blocks).contains(0) {
                b.update(from: a, count: rowBytes)  // the whole macroblock row changed already
                continue
            }
            // Whole blocks by 8-byte words, the ragged right end by memcmp.
            let whole = rowBytes / blockBytes
            let words = blockBytes / 8
            for column in 0..<whole where marks[column] == 0 {
                let p = UnsafeRawPointer(a + column * blockBytes), q = UnsafeRawPointer(b + column * blockBytes)
                var differs = false
                for w in 0..<words where p.loadUnaligned(fromByteOffset: w * 8, as: UInt64.self) != q.loadUnaligned(fromByteOffset: w * 8, as: UInt64.self) {
                    differs = true
                    break
                }
                if differs {
                    marks[column] = 1
                    count += 1
                }
            }
            let tail = rowBytes - whole * blockBytes
            if tail > 0, marks[whole] == 0, memcmp(a + whole * blockBytes, b + whole * blockBytes, tail) != 0 {
                marks[whole] = 1
                count += 1
            }
            b.update(from: a, count: rowBytes)
        }
        return (count, false)
    }

    private func copyPlane(_ input: EncoderInput, _ plane: Int, into buffer: PixelBuffer) {
        let rowBytes = input.format.rowBytes(plane: plane, width: input.width)
        let source = input.plane(plane), stride = input.stride(plane)
        let target = buffer.plane(plane).assumingMemoryBound(to: UInt8.self), targetStride = buffer.stride(plane)
        for y in 0..<input.format.rows(plane: plane, height: input.height) {
            (target + y * targetStride).update(from: source + y * stride, count: rowBytes)
        }
    }
}
