internal import CTurboJPEG

/// Encodes I420 or BGRA pictures to baseline 4:2:0 JPEG with turbojpeg: the
/// compressed hand-off that other SDKs use between extension and app.
public final class JPEGEncoder {
    private let handle: tjhandle
    let quality: Int32

    public init(quality: Int = 90) throws(CodecError) {
        guard let handle = tjInitCompress() else { throw .library("tjInitCompress", "out of memory") }
        self.handle = handle
        self.quality = Int32(quality)
    }

    deinit { tjDestroy(handle) }

    /// The most bytes a JPEG of this size can take.
    static func maxSize(width: Int, height: Int) -> Int {
        Int(tjBufSize(Int32(width), Int32(height), Int32(TJSAMP_420.rawValue)))
    }

    /// Compresses an I420 or BGRA picture to JPEG bytes.
    public func jpeg(of source: PixelBuffer) throws -> [UInt8] {
        let out = try PixelBuffer(width: source.width, height: source.height, format: .jpeg)
        try encode(source, into: out)
        return out.withUnsafeBytes { Array($0) }
    }

    /// Compresses `source` (I420 or BGRA) into `destination`, a JPEG buffer of the same size.
    package func encode(_ source: PixelBuffer, into destination: PixelBuffer) throws(CodecError) {
        precondition(destination.format == .jpeg && destination.width == source.width && destination.height == source.height)
        var output: UnsafeMutablePointer<UInt8>? = destination.storage.assumingMemoryBound(to: UInt8.self)
        var size = UInt(destination.capacity)
        let flags = TJFLAG_NOREALLOC | TJFLAG_FASTDCT
        let status: Int32
        switch source.format {
        case .i420:
            // Plane pointers and strides on the stack: nothing allocated per frame.
            status = withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 3) { planes in
                withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3) { strides in
                    for i in 0..<3 {
                        planes[i] = UnsafePointer(source.plane(i).assumingMemoryBound(to: UInt8.self))
                        strides[i] = Int32(source.stride(i))
                    }
                    return tjCompressFromYUVPlanes(
                        handle, planes.baseAddress, Int32(source.width), strides.baseAddress, Int32(source.height),
                        Int32(TJSAMP_420.rawValue), &output, &size, quality, flags)
                }
            }
        case .bgra:
            status = tjCompress2(
                handle, source.plane(0).assumingMemoryBound(to: UInt8.self), Int32(source.width), Int32(source.stride(0)),
                Int32(source.height), Int32(TJPF_BGRA.rawValue), &output, &size, Int32(TJSAMP_420.rawValue), quality, flags)
        default:
            preconditionFailure("JPEG from \(source.format)")
        }
        guard status == 0 else { throw .library("tjCompress", String(cString: tjGetErrorStr2(handle))) }
        destination.setJPEGByteCount(Int(size))
    }
}
