/// A picture ready for the encoder: I420 or NV12 planes in memory owned by
/// someone else (a ring slot or a converter's buffer), never copied here.
import FrameRelayFrames

public struct EncoderInput {
    public var width: Int
    public var height: Int
    public var format: PixelFormat  // .i420 or .nv12
    var planes: (UnsafeRawPointer, UnsafeRawPointer, UnsafeRawPointer?)
    var strides: (Int, Int, Int)

    init(width: Int, height: Int, format: PixelFormat, planes: (UnsafeRawPointer, UnsafeRawPointer, UnsafeRawPointer?), strides: (Int, Int, Int)) {
        self.width = width
        self.height = height
        self.format = format
        self.planes = planes
        self.strides = strides
    }

    /// The planes of an I420 or NV12 buffer, valid while the buffer lives.
    public init(_ buffer: PixelBuffer) {
        precondition(buffer.format == .i420 || buffer.format == .nv12, "the encoder reads I420 or NV12")
        self.init(
            width: buffer.width, height: buffer.height, format: buffer.format,
            planes: (UnsafeRawPointer(buffer.plane(0)), UnsafeRawPointer(buffer.plane(1)), buffer.format == .i420 ? UnsafeRawPointer(buffer.plane(2)) : nil),
            strides: (buffer.stride(0), buffer.stride(1), buffer.format == .i420 ? buffer.stride(2) : 0))
    }
}

extension EncoderInput {
    /// Plane `index`'s first byte.
    package func plane(_ index: Int) -> UnsafePointer<UInt8> {
        let base = index == 0 ? planes.0 : index == 1 ? planes.1 : planes.2!
        return base.assumingMemoryBound(to: UInt8.self)
    }

    /// Plane `index`'s stride.
    package func stride(_ index: Int) -> Int { index == 0 ? strides.0 : index == 1 ? strides.1 : strides.2 }
}
