/// A borrowed, zero-copy view of the frame the host took: its validated
/// metadata and its payload in the host's slot of the shared mapping.
///
/// Valid only until the next ``RingHost/next(timeoutNanoseconds:)``; never
/// keep it, or a pointer from it, beyond that.
import FrameRelayFrames

public struct FrameView {
    public let metadata: FrameMetadata
    package let payload: UnsafeRawPointer

    /// Calls `body` with the whole payload. Do not let the buffer escape.
    public func withUnsafePayload<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: payload, count: metadata.payloadSize))
    }

    /// Calls `body` with plane `index` and its stride. Do not let the buffer escape.
    public func withUnsafePlane<R>(_ index: Int, _ body: (UnsafeRawBufferPointer, _ stride: Int) throws -> R) rethrows -> R {
        precondition(index < metadata.format.planeCount)
        let offset = metadata.planes.offset(plane: index)
        let stride = metadata.planes.stride(plane: index)
        let rows = metadata.format.rows(plane: index, height: metadata.height)
        let count = stride * (rows - 1) + metadata.format.rowBytes(plane: index, width: metadata.width)
        return try body(UnsafeRawBufferPointer(start: payload + offset, count: count), stride)
    }

    /// Base address of plane `index` (inside the library's hot path only).
    package func plane(_ index: Int) -> UnsafeRawPointer { payload + metadata.planes.offset(plane: index) }
}
