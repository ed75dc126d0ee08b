/// Turns an upright picture from a source (I420 or BGRA) into what the
/// producer was asked to send: another pixel format, JPEG, and the pixels
/// turned as a device in that orientation would store them.
import FrameRelayFrames

public final class FrameFormatter {
    public let format: PixelFormat
    public let orientation: Orientation
    private var rotated: PixelBuffer?
    private var mirrorScratch: PixelBuffer?
    private var output: PixelBuffer?
    private var jpeg: JPEGEncoder?

    public init(format: PixelFormat, orientation: Orientation) {
        self.format = format
        self.orientation = orientation
    }

    /// The buffer to send for `upright`: `upright` itself when nothing is to
    /// be done, else one of this formatter's reused buffers.
    public func format(_ upright: PixelBuffer) throws -> PixelBuffer {
        var picture = upright
        if orientation != .up {
            // Stored pixels are the upright picture turned back: rotate by the inverse.
            let degrees = (360 - orientation.clockwiseDegreesToUpright) % 360
            let swap = orientation.swapsDimensions
            let (w, h) = swap ? (upright.height, upright.width) : (upright.width, upright.height)
            let target = try reuse(&rotated, width: w, height: h, format: upright.format)
            let scratch = orientation.isMirrored ? try reuse(&mirrorScratch, width: w, height: h, format: upright.format) : nil
            PixelConversion.rotate(upright, clockwiseDegrees: degrees, mirror: orientation.isMirrored, into: target, scratch: scratch)
            picture = target
        }
        if picture.format == format { return picture }
        let out = try reuse(&output, width: picture.width, height: picture.height, format: format)
        if format == .jpeg {
            if jpeg == nil { jpeg = try JPEGEncoder() }
            try jpeg!.encode(picture, into: out)
        } else {
            PixelConversion.convert(picture, to: out)
        }
        return out
    }

    private func reuse(_ slot: inout PixelBuffer?, width: Int, height: Int, format: PixelFormat) throws -> PixelBuffer {
        if let buffer = slot, buffer.width == width, buffer.height == height, buffer.format == format { return buffer }
        let buffer = try PixelBuffer(width: width, height: height, format: format)
        slot = buffer
        return buffer
    }
}
