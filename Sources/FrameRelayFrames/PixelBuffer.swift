@preconcurrency import Glibc

/// One captured picture owned by the producer, like a `CVPixelBuffer` inside
/// a ReplayKit sample: planes in one allocation, rows `stride` bytes apart.
///
/// Allocated once per size and format and reused for every frame; JPEG
/// buffers hold an encoded file of ``byteCount`` bytes within ``capacity``.
public final class PixelBuffer {
    public let width: Int
    public let height: Int
    public let format: PixelFormat
    /// Bytes allocated.
    public let capacity: Int
    /// Bytes in use: the planes, or the JPEG file.
    public internal(set) var byteCount: Int
    /// Plane offsets and strides.
    public let layout: PlaneLayout
    package let storage: UnsafeMutableRawPointer
    /// Whether the buffer allocated its storage (and frees it).
    private let owned: Bool

    /// A zeroed buffer of `width`×`height` in `format`. Rows are padded to
    /// `rowAlignment` bytes, as CoreVideo pads them to 64.
    public init(width: Int, height: Int, format: PixelFormat, rowAlignment: Int = 64) throws(FrameSizeError) {
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw FrameSizeError(width: width, height: height)
        }
        let (layout, size) = Self.layout(width: width, height: height, format: format, rowAlignment: rowAlignment)
        self.width = width
        self.height = height
        self.format = format
        self.capacity = size
        self.byteCount = format == .jpeg ? 0 : size
        self.layout = layout
        self.storage = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        owned = true
    }

    /// A buffer of `width`×`height` in `format` (rows padded to 64 bytes)
    /// over memory someone else owns, such as a ring slot's payload: valid
    /// only while that memory is, and never freed by the buffer.
    package init(wrapping storage: UnsafeMutableRawPointer, width: Int, height: Int, format: PixelFormat) throws(FrameSizeError) {
        guard format != .jpeg, (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw FrameSizeError(width: width, height: height)
        }
        let (layout, size) = PlaneLayout.padded(width: width, height: height, format: format, rowAlignment: 64)
        self.width = width
        self.height = height
        self.format = format
        self.capacity = size
        self.byteCount = size
        self.layout = layout
        self.storage = storage
        owned = false
    }

    deinit { if owned { storage.deallocate() } }

    /// Bytes a buffer of this size and format needs, without allocating one.
    public static func capacity(width: Int, height: Int, format: PixelFormat, rowAlignment: Int = 64) throws(FrameSizeError) -> Int {
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw FrameSizeError(width: width, height: height)
        }
        return layout(width: width, height: height, format: format, rowAlignment: rowAlignment).size
    }

    /// Plane offsets and strides (rows padded to `rowAlignment`), and the total size.
    private static func layout(width: Int, height: Int, format: PixelFormat, rowAlignment: Int) -> (PlaneLayout, size: Int) {
        guard format != .jpeg else { return (PlaneLayout(), JPEGEncoder.maxSize(width: width, height: height)) }
        return PlaneLayout.padded(width: width, height: height, format: format, rowAlignment: rowAlignment)
    }

    /// Calls `body` with plane `index` (its rows `stride` bytes apart). Do not
    /// let the buffer escape the closure.
    public func withUnsafeMutablePlane<R>(
        _ index: Int, _ body: (UnsafeMutableRawBufferPointer, _ stride: Int) throws -> R
    ) rethrows -> R {
        precondition(index < format.planeCount, "plane \(index) of \(format)")
        let offset = layout.offset(plane: index)
        let stride = layout.stride(plane: index)
        let size = stride * format.rows(plane: index, height: height)
        return try body(UnsafeMutableRawBufferPointer(start: storage + offset, count: size), stride)
    }

    /// Calls `body` with the bytes in use. Do not let the buffer escape the closure.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage, count: byteCount))
    }

    /// Sets the length of the JPEG file written into the storage.
    func setJPEGByteCount(_ count: Int) {
        precondition(format == .jpeg && count <= capacity)
        byteCount = count
    }

    package func plane(_ index: Int) -> UnsafeMutableRawPointer { storage + layout.offset(plane: index) }
    package func stride(_ index: Int) -> Int { layout.stride(plane: index) }
}

/// A frame size outside what the ring and VP8 carry.
public struct FrameSizeError: Error, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var description: String {
        "invalid frame size \(width)x\(height): width and height must be 1...\(FrameMetadata.maxDimension)"
    }
}

extension PixelBuffer {
    /// Copies BGRx pixels into `rect` of this BGRA picture, alpha made opaque
    /// (a desktop capture's 4th byte is undefined): `source` is the rect's
    /// first pixel, `stride` bytes from one of its rows to the next.
    package func copyOpaque(from source: UnsafeRawPointer, stride: Int, into rect: PixelRect) {
        let to = self.stride(0)
        for row in 0..<rect.height {
            let from = (source + row * stride).assumingMemoryBound(to: UInt32.self)
            let into = (storage + (rect.y + row) * to).assumingMemoryBound(to: UInt32.self) + rect.x
            for i in 0..<rect.width { into[i] = from[i] | 0xFF00_0000 }
        }
    }
}
