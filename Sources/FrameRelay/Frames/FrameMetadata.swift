/// Everything the host needs to know about one frame, stored in front of its
/// payload in a ring slot.
///
/// ### Layout (128 bytes, little-endian, at the start of every slot)
/// ```
///   0  frameNumber   u64     48  planeCount   u32
///   8  captureTime   u64     52  payloadSize  u32
///  16  publishTime   u64     56  offset[0..3] u32 ×3
///  24  checksum      u64     68  stride[0..3] u32 ×3
///  32  width         u32     80  reserved (48 bytes, zero)
///  36  height        u32
///  40  format        u32  (PixelFormat raw value)
///  44  orientation   u32  (Orientation raw value)
/// ```
/// Times are CLOCK_MONOTONIC nanoseconds. `checksum` is ``FrameChecksum`` of
/// the payload, or 0 when the producer does not compute one.
public struct FrameMetadata: Sendable, Equatable {
    public static let byteCount = 128
    /// The largest width or height VP8 can code.
    public static let maxDimension = 16383

    public var frameNumber: UInt64
    public var captureTime: UInt64
    public var publishTime: UInt64
    public var checksum: UInt64
    public var width: Int
    public var height: Int
    public var format: PixelFormat
    public var orientation: Orientation
    public var payloadSize: Int
    /// Byte offset of each plane from the payload's start (unused planes 0).
    public var offsets: (Int, Int, Int)
    /// Bytes from one row to the next in each plane (unused planes 0).
    public var strides: (Int, Int, Int)

    public init(
        frameNumber: UInt64, captureTime: UInt64, publishTime: UInt64 = 0, checksum: UInt64 = 0,
        width: Int, height: Int, format: PixelFormat, orientation: Orientation,
        payloadSize: Int, offsets: (Int, Int, Int), strides: (Int, Int, Int)
    ) {
        self.frameNumber = frameNumber
        self.captureTime = captureTime
        self.publishTime = publishTime
        self.checksum = checksum
        self.width = width
        self.height = height
        self.format = format
        self.orientation = orientation
        self.payloadSize = payloadSize
        self.offsets = offsets
        self.strides = strides
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.frameNumber == b.frameNumber && a.captureTime == b.captureTime && a.publishTime == b.publishTime
            && a.checksum == b.checksum && a.width == b.width && a.height == b.height && a.format == b.format
            && a.orientation == b.orientation && a.payloadSize == b.payloadSize
            && a.offsets == b.offsets && a.strides == b.strides
    }

    /// Offset of plane `index`.
    public func offset(plane index: Int) -> Int {
        switch index {
        case 0: offsets.0
        case 1: offsets.1
        default: offsets.2
        }
    }

    /// Sets plane `index`'s offset and stride.
    public mutating func setPlane(_ index: Int, offset: Int, stride: Int) {
        switch index {
        case 0: offsets.0 = offset; strides.0 = stride
        case 1: offsets.1 = offset; strides.1 = stride
        default: offsets.2 = offset; strides.2 = stride
        }
    }

    /// Stride of plane `index`.
    public func stride(plane index: Int) -> Int {
        switch index {
        case 0: strides.0
        case 1: strides.1
        default: strides.2
        }
    }
}

/// Field offsets of ``FrameMetadata`` in shared memory.
public enum FrameMetadataField {
    public static let frameNumber = 0
    public static let captureTime = 8
    public static let publishTime = 16
    public static let checksum = 24
    public static let width = 32
    public static let height = 36
    public static let format = 40
    public static let orientation = 44
    public static let planeCount = 48
    public static let payloadSize = 52
    public static let offsets = 56
    public static let strides = 68
}

extension FrameMetadata {
    /// Writes this metadata at `base` in the layout above.
    func store(to base: UnsafeMutableRawPointer) {
        base.storeBytes(of: frameNumber.littleEndian, toByteOffset: FrameMetadataField.frameNumber, as: UInt64.self)
        base.storeBytes(of: captureTime.littleEndian, toByteOffset: FrameMetadataField.captureTime, as: UInt64.self)
        base.storeBytes(of: publishTime.littleEndian, toByteOffset: FrameMetadataField.publishTime, as: UInt64.self)
        base.storeBytes(of: checksum.littleEndian, toByteOffset: FrameMetadataField.checksum, as: UInt64.self)
        func u32(_ offset: Int, _ value: Int) {
            base.storeBytes(of: UInt32(truncatingIfNeeded: value).littleEndian, toByteOffset: offset, as: UInt32.self)
        }
        u32(FrameMetadataField.width, width)
        u32(FrameMetadataField.height, height)
        u32(FrameMetadataField.format, Int(format.rawValue))
        u32(FrameMetadataField.orientation, Int(orientation.rawValue))
        u32(FrameMetadataField.planeCount, format.planeCount)
        u32(FrameMetadataField.payloadSize, payloadSize)
        for plane in 0..<3 {
            u32(FrameMetadataField.offsets + 4 * plane, offset(plane: plane))
            u32(FrameMetadataField.strides + 4 * plane, stride(plane: plane))
        }
    }

    /// Reads metadata that anyone may have written at `base` and checks every
    /// field against a payload area of `capacity` bytes. The fields are read
    /// once into local values, so a writer racing with us cannot change what
    /// was validated.
    static func load(from base: UnsafeRawPointer, capacity: Int) throws(InvalidFrame) -> FrameMetadata {
        func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        func u32(_ offset: Int) -> Int { Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }

        let width = u32(FrameMetadataField.width)
        let height = u32(FrameMetadataField.height)
        guard (1...maxDimension).contains(width), (1...maxDimension).contains(height) else {
            throw .badSize(width: width, height: height)
        }
        guard let format = PixelFormat(rawValue: UInt32(u32(FrameMetadataField.format))) else {
            throw .badFormat(u32(FrameMetadataField.format))
        }
        guard let orientation = Orientation(rawValue: UInt32(u32(FrameMetadataField.orientation))) else {
            throw .badOrientation(u32(FrameMetadataField.orientation))
        }
        let payloadSize = u32(FrameMetadataField.payloadSize)
        guard payloadSize > 0, payloadSize <= capacity else { throw .badPayloadSize(payloadSize, capacity: capacity) }
        let planeCount = u32(FrameMetadataField.planeCount)
        guard planeCount == format.planeCount else { throw .badPlaneCount(planeCount, format: format) }

        var metadata = FrameMetadata(
            frameNumber: u64(FrameMetadataField.frameNumber), captureTime: u64(FrameMetadataField.captureTime),
            publishTime: u64(FrameMetadataField.publishTime), checksum: u64(FrameMetadataField.checksum),
            width: width, height: height, format: format, orientation: orientation, payloadSize: payloadSize,
            offsets: (0, 0, 0), strides: (0, 0, 0)
        )
        for plane in 0..<planeCount {
            let offset = u32(FrameMetadataField.offsets + 4 * plane)
            let stride = u32(FrameMetadataField.strides + 4 * plane)
            let rowBytes = format.rowBytes(plane: plane, width: width)
            let rows = format.rows(plane: plane, height: height)
            guard stride >= rowBytes else { throw .badStride(plane: plane, stride: stride, rowBytes: rowBytes) }
            // Int is 64-bit and every factor is below 2^32, so nothing here overflows.
            let end = offset + stride * (rows - 1) + rowBytes
            guard end <= payloadSize else { throw .planeOutOfBounds(plane: plane, end: end, payloadSize: payloadSize) }
            metadata.setPlane(plane, offset: offset, stride: stride)
        }
        return metadata
    }
}

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
        case .checksumMismatch(let number): "frame \(number) fails its checksum (torn or corrupted)"
        case .undecodable(let number, let reason): "frame \(number) cannot be decoded: \(reason)"
        }
    }
}
