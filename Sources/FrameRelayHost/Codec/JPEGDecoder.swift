internal import CTurboJPEG
import FrameRelayFrames

/// Decodes JPEG frames with turbojpeg straight to I420 planes (or to BGRA
/// for JPEGs that are not 4:2:0).
final class JPEGDecoder {
    private let handle: tjhandle

    init() throws(CodecError) {
        guard let handle = tjInitDecompress() else { throw .library("tjInitDecompress", "out of memory") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// The picture size and whether it is 4:2:0.
    func header(_ jpeg: UnsafeRawBufferPointer) throws(CodecError) -> (width: Int, height: Int, is420: Bool) {
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        guard tjDecompressHeader3(handle, jpeg.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt(jpeg.count), &width, &height, &subsampling, &colorspace) == 0 else {
            throw .library("tjDecompressHeader3", String(cString: tjGetErrorStr2(handle)))
        }
        return (Int(width), Int(height), subsampling == Int32(TJSAMP_420.rawValue))
    }

    /// Decodes into `destination` (I420 for 4:2:0 input, else BGRA) of the JPEG's size.
    func decode(_ jpeg: UnsafeRawBufferPointer, into destination: PixelBuffer) throws(CodecError) {
        let source = jpeg.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let status: Int32
        if destination.format == .i420 {
            status = withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { planes in
                withUnsafeTemporaryAllocation(of: Int32.self, capacity: 3) { strides in
                    for i in 0..<3 {
                        planes[i] = destination.plane(i).assumingMemoryBound(to: UInt8.self)
                        strides[i] = Int32(destination.stride(i))
                    }
                    return tjDecompressToYUVPlanes(handle, source, UInt(jpeg.count), planes.baseAddress, Int32(destination.width),
                                                   strides.baseAddress, Int32(destination.height), TJFLAG_FASTDCT)
                }
            }
        } else {
            status = tjDecompress2(handle, source, UInt(jpeg.count), destination.plane(0).assumingMemoryBound(to: UInt8.self),
                                   Int32(destination.width), Int32(destination.stride(0)), Int32(destination.height),
                                   Int32(TJPF_BGRA.rawValue), TJFLAG_FASTDCT)
        }
        guard status == 0 else { throw .library("tjDecompress", String(cString: tjGetErrorStr2(handle))) }
    }
}
