import FrameRelayFrames
import FrameRelayDecoding

extension DecodedPicture {
    /// Copies the picture into an I420 buffer of its size.
    public func copyI420() throws -> PixelBuffer {
        let out = try PixelBuffer(width: width, height: height, format: .i420)
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        for row in 0..<height {
            (out.plane(0) + row * out.stride(0)).copyMemory(from: luma.baseAddress! + row * lumaStride, byteCount: width)
        }
        for row in 0..<chromaHeight {
            (out.plane(1) + row * out.stride(1)).copyMemory(from: u + row * chromaStride, byteCount: chromaWidth)
            (out.plane(2) + row * out.stride(2)).copyMemory(from: v + row * chromaStride, byteCount: chromaWidth)
        }
        return out
    }
}
