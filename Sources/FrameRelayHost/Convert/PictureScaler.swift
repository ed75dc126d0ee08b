internal import CYuv
import FrameRelayFrames

/// Scales a picture down for a lower simulcast layer, in the format it is
/// in (I420 or NV12, box filter), into a buffer it keeps between frames.
final class PictureScaler {
    private var buffer: PixelBuffer?

    /// `input` at `width`×`height`, valid until the next call.
    func scale(_ input: EncoderInput, width: Int, height: Int) throws -> EncoderInput {
        if buffer == nil || buffer!.width != width || buffer!.height != height || buffer!.format != input.format {
            buffer = try PixelBuffer(width: width, height: height, format: input.format)
        }
        let out = buffer!
        let y = out.plane(0).assumingMemoryBound(to: UInt8.self), u = out.plane(1).assumingMemoryBound(to: UInt8.self)
        if input.format == .nv12 {
            NV12Scale(input.plane(0), Int32(input.stride(0)), input.plane(1), Int32(input.stride(1)), Int32(input.width), Int32(input.height),
                      y, Int32(out.stride(0)), u, Int32(out.stride(1)), Int32(width), Int32(height), kFilterBox)
        } else {
            I420Scale(input.plane(0), Int32(input.stride(0)), input.plane(1), Int32(input.stride(1)), input.plane(2), Int32(input.stride(2)),
                      Int32(input.width), Int32(input.height), y, Int32(out.stride(0)), u, Int32(out.stride(1)),
                      out.plane(2).assumingMemoryBound(to: UInt8.self), Int32(out.stride(2)), Int32(width), Int32(height), kFilterBox)
        }
        return EncoderInput(out)
    }
}
