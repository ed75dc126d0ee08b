internal import CYuv
import FrameRelayFrames

/// Scales a picture down for a lower simulcast layer, in the format it is
/// in (I420 or NV12, box filter), into a buffer it keeps between frames. At
/// exactly half the size, each output pixel is the mean of its own 2×2
/// input pixels, so only the rows of macroblocks that changed are scaled
/// again; the rest of the kept picture is already what a whole scale makes.
final class PictureScaler {
    private var buffer: PixelBuffer?

    /// `input` at `width`×`height`, valid until the next call; `changedRows`:
    /// the output's macroblock rows that changed since the last call (nil:
    /// unknown, scale it all), heeded only at exactly half the size.
    func scale(_ input: EncoderInput, width: Int, height: Int, changedRows: [Bool]? = nil) throws -> EncoderInput {
        var whole = changedRows == nil || input.width != 2 * width || input.height != 2 * height
        if buffer == nil || buffer!.width != width || buffer!.height != height || buffer!.format != input.format {
            buffer = try PixelBuffer(width: width, height: height, format: input.format)
            whole = true
        }
        guard !whole, let changedRows else {
            scale(input, band: 0..<height)
            return EncoderInput(buffer!)
        }
        var row = 0
        while row < changedRows.count {
            guard changedRows[row] else { row += 1; continue }
            var end = row
            while end < changedRows.count, changedRows[end] { end += 1 }
            scale(input, band: (row * 16)..<min(height, end * 16))
            row = end
        }
        return EncoderInput(buffer!)
    }

    /// Scales the output rows `band` (even bounds) from their input rows (twice as many, or all of them when whole).
    private func scale(_ input: EncoderInput, band: Range<Int>) {
        let out = buffer!
        let whole = band == 0..<out.height
        let first = band.lowerBound, rows = band.count
        let sourceFirst = whole ? 0 : 2 * first, sourceRows = whole ? input.height : 2 * rows
        let y = out.plane(0).assumingMemoryBound(to: UInt8.self) + first * out.stride(0)
        let u = out.plane(1).assumingMemoryBound(to: UInt8.self) + first / 2 * out.stride(1)
        let inY = input.plane(0) + sourceFirst * input.stride(0), inU = input.plane(1) + sourceFirst / 2 * input.stride(1)
        if input.format == .nv12 {
            NV12Scale(inY, Int32(input.stride(0)), inU, Int32(input.stride(1)), Int32(input.width), Int32(sourceRows),
                      y, Int32(out.stride(0)), u, Int32(out.stride(1)), Int32(out.width), Int32(rows), kFilterBox)
        } else {
            let v = out.plane(2).assumingMemoryBound(to: UInt8.self) + first / 2 * out.stride(2)
            I420Scale(inY, Int32(input.stride(0)), inU, Int32(input.stride(1)), input.plane(2) + sourceFirst / 2 * input.stride(2), Int32(input.stride(2)),
                      Int32(input.width), Int32(sourceRows), y, Int32(out.stride(0)), u, Int32(out.stride(1)), v, Int32(out.stride(2)),
                      Int32(out.width), Int32(rows), kFilterBox)
        }
    }
}
