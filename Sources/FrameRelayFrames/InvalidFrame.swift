/// Why the host skipped a frame it read from shared memory.
public enum InvalidFrame: Error, CustomStringConvertible, Equatable {
    case badSize(width: Int, height: Int)
    case badFormat(Int)
    case badOrientation(Int)
    case badPayloadSize(Int, capacity: Int)
    case badPlaneCount(Int, format: PixelFormat)
    case badStride(plane: Int, stride: Int, rowBytes: Int)
    case planeOutOfBounds(plane: Int, end: Int, payloadSize: Int)
    case checksumMismatch(frameNumber: UInt64)
    /// A rectangle of the region the producer says changed reaches outside the picture.
    case badChangedRect(PixelRect, width: Int, height: Int)
    /// Metadata that holds, content that does not: a corrupt JPEG, or one
    /// whose header disagrees with the metadata; a picture the encoder refuses.
    case undecodable(frameNumber: UInt64, reason: String)

    public var description: String {
        switch self {
        case .badSize(let w, let h): "size \(w)x\(h) outside 1...\(FrameMetadata.maxDimension)"
        case .badFormat(let raw): "unknown pixel format \(raw)"
        case .badOrientation(let raw): "unknown orientation \(raw)"
        case .badPayloadSize(let size, let capacity): "payload size \(size) outside 1...\(capacity)"
        case .badPlaneCount(let count, let format): "\(count) planes for \(format)"
        case .badStride(let plane, let stride, let rowBytes): "plane \(plane) stride \(stride) < row bytes \(rowBytes)"
        case .planeOutOfBounds(let plane, let end, let size): "plane \(plane) ends at \(end), past payload size \(size)"
        case .badChangedRect(let r, let w, let h): "changed rectangle \(r.width)x\(r.height) at \(r.x),\(r.y) outside the \(w)x\(h) picture"
        case .checksumMismatch(let number): "frame \(number) fails its checksum (torn or corrupted)"
        case .undecodable(let number, let reason): "frame \(number) cannot be decoded: \(reason)"
        }
    }
}
