/// Where each plane of a picture sits in its buffer: byte offsets from the
/// buffer's start and bytes from one row to the next (unused planes 0).
public struct PlaneLayout: Sendable, Equatable {
    public var offsets: (Int, Int, Int)
    public var strides: (Int, Int, Int)

    public init(offsets: (Int, Int, Int) = (0, 0, 0), strides: (Int, Int, Int) = (0, 0, 0)) {
        self.offsets = offsets
        self.strides = strides
    }

    /// Rows padded to `rowAlignment` bytes, planes one after another; and
    /// the bytes they take.
    public static func padded(width: Int, height: Int, format: PixelFormat, rowAlignment: Int) -> (PlaneLayout, size: Int) {
        var layout = PlaneLayout()
        var size = 0
        for plane in 0..<format.planeCount {
            let rowBytes = format.rowBytes(plane: plane, width: width)
            let stride = (rowBytes + rowAlignment - 1) / rowAlignment * rowAlignment
            layout.setPlane(plane, offset: size, stride: stride)
            size += stride * format.rows(plane: plane, height: height)
        }
        return (layout, size)
    }

    public static func == (a: Self, b: Self) -> Bool { a.offsets == b.offsets && a.strides == b.strides }

    /// Offset of plane `index`.
    public func offset(plane index: Int) -> Int {
        switch index {
        case 0: offsets.0
        case 1: offsets.1
        default: offsets.2
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

    /// Sets plane `index`'s offset and stride.
    public mutating func setPlane(_ index: Int, offset: Int, stride: Int) {
        switch index {
        case 0: offsets.0 = offset; strides.0 = stride
        case 1: offsets.1 = offset; strides.1 = stride
        default: offsets.2 = offset; strides.2 = stride
        }
    }
}
