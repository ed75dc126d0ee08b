internal import CYuv

/// libyuv conversions between ``PixelBuffer``s of the same picture size.
public enum PixelConversion {
    private static func y(_ b: PixelBuffer, _ i: Int) -> UnsafeMutablePointer<UInt8> { b.plane(i).assumingMemoryBound(to: UInt8.self) }
    private static func s(_ b: PixelBuffer, _ i: Int) -> Int32 { Int32(b.stride(i)) }

    /// Converts a raw I420 or BGRA buffer to another raw format (I420, NV12, BGRA).
    public static func convert(_ src: PixelBuffer, to dst: PixelBuffer) {
        precondition(src.width == dst.width && src.height == dst.height)
        let w = Int32(src.width), h = Int32(src.height)
        switch (src.format, dst.format) {
        case (.i420, .nv12):
            I420ToNV12(y(src, 0), s(src, 0), y(src, 1), s(src, 1), y(src, 2), s(src, 2), y(dst, 0), s(dst, 0), y(dst, 1), s(dst, 1), w, h)
        case (.i420, .bgra):
            I420ToARGB(y(src, 0), s(src, 0), y(src, 1), s(src, 1), y(src, 2), s(src, 2), y(dst, 0), s(dst, 0), w, h)
        case (.i420, .i420):
            I420Copy(y(src, 0), s(src, 0), y(src, 1), s(src, 1), y(src, 2), s(src, 2), y(dst, 0), s(dst, 0), y(dst, 1), s(dst, 1), y(dst, 2), s(dst, 2), w, h)
        case (.bgra, .i420):
            ARGBToI420(y(src, 0), s(src, 0), y(dst, 0), s(dst, 0), y(dst, 1), s(dst, 1), y(dst, 2), s(dst, 2), w, h)
        case (.bgra, .nv12):
            ARGBToNV12(y(src, 0), s(src, 0), y(dst, 0), s(dst, 0), y(dst, 1), s(dst, 1), w, h)
        case (.bgra, .bgra):
            ARGBCopy(y(src, 0), s(src, 0), y(dst, 0), s(dst, 0), w, h)
        default:
            preconditionFailure("no conversion \(src.format) → \(dst.format)")
        }
    }

    /// Converts 32-bit BGRx or BGRA pixels (`source` at the rectangle's
    /// top-left pixel, `stride` bytes a row) into `rect` of `dst`: I420 or
    /// NV12 (alpha unread; `rect` starts on even rows and columns), or BGRA
    /// with alpha made opaque. A capture converts straight from what the
    /// compositor mapped, without a whole BGRA picture of its own.
    package static func convert(bgrx source: UnsafeRawPointer, stride: Int, into dst: PixelBuffer, at rect: PixelRect) {
        let src = source.assumingMemoryBound(to: UInt8.self)
        let w = Int32(rect.width), h = Int32(rect.height)
        func at(_ plane: Int, _ x: Int, _ y: Int) -> UnsafeMutablePointer<UInt8> { Self.y(dst, plane) + y * dst.stride(plane) + x }
        switch dst.format {
        case .i420:
            ARGBToI420(src, Int32(stride), at(0, rect.x, rect.y), s(dst, 0), at(1, rect.x / 2, rect.y / 2), s(dst, 1),
                       at(2, rect.x / 2, rect.y / 2), s(dst, 2), w, h)
        case .nv12:
            ARGBToNV12(src, Int32(stride), at(0, rect.x, rect.y), s(dst, 0), at(1, rect.x / 2 * 2, rect.y / 2), s(dst, 1), w, h)
        case .bgra:
            dst.copyOpaque(from: source, stride: stride, into: rect)
        default:
            preconditionFailure("no conversion BGRx → \(dst.format)")
        }
    }

    /// Converts a picture's pixels where they lie (`planes` at the
    /// rectangle's top-left pixel of each plane, `strides` bytes a row):
    /// BGRx or BGRA (`.bgra`, one plane), or 8-bit YUV 4:2:0 (`.i420`: Y, U,
    /// V; `.nv12`: Y, then U and V interleaved) into `rect` of `dst`, which
    /// starts on even rows and columns where either side is YUV.
    package static func convert(_ format: PixelFormat, planes: (UnsafeRawPointer, UnsafeRawPointer?, UnsafeRawPointer?), strides: (Int, Int, Int),
                                into dst: PixelBuffer, at rect: PixelRect) {
        if format == .bgra { return convert(bgrx: planes.0, stride: strides.0, into: dst, at: rect) }
        let w = Int32(rect.width), h = Int32(rect.height)
        func at(_ plane: Int, _ x: Int, _ y: Int) -> UnsafeMutablePointer<UInt8> { Self.y(dst, plane) + y * dst.stride(plane) + x }
        func source(_ plane: UnsafeRawPointer?) -> UnsafePointer<UInt8> { plane!.assumingMemoryBound(to: UInt8.self) }
        let sy = source(planes.0), s0 = Int32(strides.0), s1 = Int32(strides.1), s2 = Int32(strides.2)
        let (x, y) = (rect.x, rect.y)
        switch (format, dst.format) {
        case (.i420, .i420):
            I420Copy(sy, s0, source(planes.1), s1, source(planes.2), s2, at(0, x, y), s(dst, 0), at(1, x / 2, y / 2), s(dst, 1),
                     at(2, x / 2, y / 2), s(dst, 2), w, h)
        case (.i420, .nv12):
            I420ToNV12(sy, s0, source(planes.1), s1, source(planes.2), s2, at(0, x, y), s(dst, 0), at(1, x, y / 2), s(dst, 1), w, h)
        case (.i420, .bgra):
            I420ToARGB(sy, s0, source(planes.1), s1, source(planes.2), s2, at(0, x * 4, y), s(dst, 0), w, h)
        case (.nv12, .i420):
            NV12ToI420(sy, s0, source(planes.1), s1, at(0, x, y), s(dst, 0), at(1, x / 2, y / 2), s(dst, 1), at(2, x / 2, y / 2), s(dst, 2), w, h)
        case (.nv12, .nv12):
            NV12Copy(sy, s0, source(planes.1), s1, at(0, x, y), s(dst, 0), at(1, x, y / 2), s(dst, 1), w, h)
        case (.nv12, .bgra):
            NV12ToARGB(sy, s0, source(planes.1), s1, at(0, x * 4, y), s(dst, 0), w, h)
        default:
            preconditionFailure("no conversion \(format) → \(dst.format)")
        }
    }

    /// Draws premultiplied BGRA pixels (`source`, `stride` bytes a row) over
    /// `rect` of a BGRA picture (libyuv's ARGBBlend: a pointer over a screen).
    package static func blend(premultiplied source: UnsafeRawPointer, stride: Int, over dst: PixelBuffer, at rect: PixelRect) {
        precondition(dst.format == .bgra)
        let into = y(dst, 0) + rect.y * dst.stride(0) + rect.x * 4
        ARGBBlend(source.assumingMemoryBound(to: UInt8.self), Int32(stride), into, s(dst, 0), into, s(dst, 0), Int32(rect.width), Int32(rect.height))
    }

    /// libyuv's PSNR over all three planes of two I420 pictures of one size,
    /// in dB (capped at 100 for identical pictures): what a viewer sees against the source.
    public static func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
        precondition(a.format == .i420 && b.format == .i420 && a.width == b.width && a.height == b.height)
        return min(100, I420Psnr(y(a, 0), s(a, 0), y(a, 1), s(a, 1), y(a, 2), s(a, 2), y(b, 0), s(b, 0), y(b, 1), s(b, 1), y(b, 2), s(b, 2),
                                 Int32(a.width), Int32(a.height)))
    }

    /// Rotates (clockwise, in degrees) and optionally mirrors an I420 or BGRA
    /// buffer into `dst`, whose size is the rotated size.
    package static func rotate(_ src: PixelBuffer, clockwiseDegrees: Int, mirror: Bool, into dst: PixelBuffer, scratch: PixelBuffer?) {
        precondition(src.format == dst.format)
        let w = Int32(src.width), h = Int32(src.height)
        let mode = RotationMode(rawValue: UInt32(clockwiseDegrees))
        let target = mirror ? scratch! : dst
        switch src.format {
        case .i420:
            I420Rotate(y(src, 0), s(src, 0), y(src, 1), s(src, 1), y(src, 2), s(src, 2),
                       y(target, 0), s(target, 0), y(target, 1), s(target, 1), y(target, 2), s(target, 2), w, h, mode)
            if mirror {
                I420Mirror(y(target, 0), s(target, 0), y(target, 1), s(target, 1), y(target, 2), s(target, 2),
                           y(dst, 0), s(dst, 0), y(dst, 1), s(dst, 1), y(dst, 2), s(dst, 2), Int32(dst.width), Int32(dst.height))
            }
        case .bgra:
            ARGBRotate(y(src, 0), s(src, 0), y(target, 0), s(target, 0), w, h, mode)
            if mirror {
                ARGBMirror(y(target, 0), s(target, 0), y(dst, 0), s(dst, 0), Int32(dst.width), Int32(dst.height))
            }
        default:
            preconditionFailure("rotation of \(src.format)")
        }
    }
}
