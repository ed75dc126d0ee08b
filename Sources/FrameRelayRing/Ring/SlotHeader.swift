/// A frame's ``FrameMetadata`` as it is stored in front of its payload in
/// a ring slot.
///
/// ### Layout (192 bytes, little-endian, at the start of every slot)
/// ```
///   0  frameNumber   u64     48  planeCount   u32
///   8  captureTime   u64     52  payloadSize  u32
///  16  publishTime   u64     56  offset[0..3] u32 ×3
///  24  checksum      u64     68  stride[0..3] u32 ×3
///  32  width         u32     80  picture       u64  (0: not said)
///  36  height        u32     88  changedSince  u64  (0: not said)
///  40  format        u32     96  changed       4 × (x, y, width, height) u16
///  44  orientation   u32         (a rectangle with no width or height: none)
///                           128  pictureFrame  u64  (the frame number + 1; 0: not said)
///                           136  reserved (56 bytes, not read: the payload starts 64-byte aligned)
/// ```
/// `format` and `orientation` are the raw values of ``PixelFormat`` and
/// ``Orientation``. Each `changed` rectangle lies inside the picture, or
/// has no width or height (none, wherever its x and y are).
import FrameRelayFrames

public enum SlotHeader {
    public static let byteCount = 192
    /// Byte offsets of the fields.
    public enum Field {
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
        public static let picture = 80
        public static let changedSince = 88
        public static let changed = 96
        public static let pictureFrame = 128
    }

    /// Writes `metadata` at `base` in the layout above.
    static func store(_ metadata: FrameMetadata, to base: UnsafeMutableRawPointer) {
        let m = metadata
        base.storeBytes(of: m.frameNumber.littleEndian, toByteOffset: Field.frameNumber, as: UInt64.self)
        base.storeBytes(of: m.captureTime.littleEndian, toByteOffset: Field.captureTime, as: UInt64.self)
        base.storeBytes(of: m.publishTime.littleEndian, toByteOffset: Field.publishTime, as: UInt64.self)
        base.storeBytes(of: m.checksum.littleEndian, toByteOffset: Field.checksum, as: UInt64.self)
        base.storeBytes(of: m.picture.littleEndian, toByteOffset: Field.picture, as: UInt64.self)
        base.storeBytes(of: m.changedSince.littleEndian, toByteOffset: Field.changedSince, as: UInt64.self)
        base.storeBytes(of: (m.pictureFrame.map { $0 &+ 1 } ?? 0).littleEndian, toByteOffset: Field.pictureFrame, as: UInt64.self)
        for i in 0..<PixelRegion.maxRects {
            let r = i < m.changed.count ? m.changed[i] : .empty
            func u16(_ k: Int, _ value: Int) {
                base.storeBytes(of: UInt16(truncatingIfNeeded: value).littleEndian, toByteOffset: Field.changed + 8 * i + 2 * k, as: UInt16.self)
            }
            u16(0, r.x)
            u16(1, r.y)
            u16(2, r.width)
            u16(3, r.height)
        }
        func u32(_ offset: Int, _ value: Int) {
            base.storeBytes(of: UInt32(truncatingIfNeeded: value).littleEndian, toByteOffset: offset, as: UInt32.self)
        }
        u32(Field.width, m.width)
        u32(Field.height, m.height)
        u32(Field.format, Int(m.format.rawValue))
        u32(Field.orientation, Int(m.orientation.rawValue))
        u32(Field.planeCount, m.format.planeCount)
        u32(Field.payloadSize, m.payloadSize)
        for plane in 0..<3 {
            u32(Field.offsets + 4 * plane, m.planes.offset(plane: plane))
            u32(Field.strides + 4 * plane, m.planes.stride(plane: plane))
        }
    }

    /// Reads metadata that anyone may have written at `base` and checks every
    /// field against a payload area of `capacity` bytes. The fields are read
    /// once into local values, so a writer racing with us cannot change what
    /// was validated.
    public static func load(from base: UnsafeRawPointer, capacity: Int) throws(InvalidFrame) -> FrameMetadata {
        func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        func u32(_ offset: Int) -> Int { Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }

        let width = u32(Field.width)
        let height = u32(Field.height)
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw .badSize(width: width, height: height)
        }
        guard let format = PixelFormat(rawValue: UInt32(u32(Field.format))) else {
            throw .badFormat(u32(Field.format))
        }
        guard let orientation = Orientation(rawValue: UInt32(u32(Field.orientation))) else {
            throw .badOrientation(u32(Field.orientation))
        }
        let payloadSize = u32(Field.payloadSize)
        guard payloadSize > 0, payloadSize <= capacity else { throw .badPayloadSize(payloadSize, capacity: capacity) }
        let planeCount = u32(Field.planeCount)
        guard planeCount == format.planeCount else { throw .badPlaneCount(planeCount, format: format) }

        var metadata = FrameMetadata(
            frameNumber: u64(Field.frameNumber), captureTime: u64(Field.captureTime),
            publishTime: u64(Field.publishTime), checksum: u64(Field.checksum), picture: u64(Field.picture),
            width: width, height: height, format: format, orientation: orientation, payloadSize: payloadSize,
            planes: PlaneLayout()
        )
        let pictureFrame = u64(Field.pictureFrame)
        metadata.pictureFrame = pictureFrame == 0 ? nil : pictureFrame - 1
        metadata.changedSince = u64(Field.changedSince)
        if metadata.changedSince != 0 {
            func u16(_ offset: Int) -> Int { Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self))) }
            for i in 0..<PixelRegion.maxRects {
                let at = Field.changed + 8 * i
                let rect = PixelRect(x: u16(at), y: u16(at + 2), width: u16(at + 4), height: u16(at + 6))
                // A rectangle with no width or height is "none", wherever it says it is.
                guard rect.isEmpty || (rect.x + rect.width <= width && rect.y + rect.height <= height) else {
                    throw .badChangedRect(rect, width: width, height: height)
                }
                metadata.changed.add(rect)
            }
        }
        for plane in 0..<planeCount {
            let offset = u32(Field.offsets + 4 * plane)
            let stride = u32(Field.strides + 4 * plane)
            let rowBytes = format.rowBytes(plane: plane, width: width)
            let rows = format.rows(plane: plane, height: height)
            guard stride >= rowBytes else { throw .badStride(plane: plane, stride: stride, rowBytes: rowBytes) }
            // Int is 64-bit and every factor is below 2^32, so nothing here overflows.
            let end = offset + stride * (rows - 1) + rowBytes
            guard end <= payloadSize else { throw .planeOutOfBounds(plane: plane, end: end, payloadSize: payloadSize) }
            metadata.planes.setPlane(plane, offset: offset, stride: stride)
        }
        return metadata
    }
}
