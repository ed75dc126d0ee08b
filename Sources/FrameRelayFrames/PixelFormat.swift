/// How a frame's pixels are laid out in its payload.
///
/// The raw values are stored in shared memory; never renumber them.
public enum PixelFormat: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    /// One plane, 4 bytes a pixel in memory order B, G, R, A (CoreVideo's 32BGRA, libyuv's "ARGB").
    case bgra = 1
    /// A full-size Y plane, then one interleaved half-size UV plane.
    case nv12 = 2
    /// Three planes: Y, then half-size U, then half-size V.
    case i420 = 3
    /// A JPEG file (baseline, 4:2:0), the compressed hand-off other SDKs use.
    case jpeg = 4

    /// Parses the command-line spelling (`bgra`, `nv12`, `i420`, `jpeg`).
    public init?(name: String) {
        guard let format = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = format
    }

    public var description: String {
        switch self {
        case .bgra: "bgra"
        case .nv12: "nv12"
        case .i420: "i420"
        case .jpeg: "jpeg"
        }
    }

    /// Number of pixel planes; JPEG has none (its payload is opaque bytes).
    public var planeCount: Int {
        switch self {
        case .bgra: 1
        case .nv12: 2
        case .i420: 3
        case .jpeg: 0
        }
    }

    /// Bytes of pixel data in one row of `plane` for a frame `width` wide.
    public func rowBytes(plane: Int, width: Int) -> Int {
        let chromaWidth = (width + 1) / 2
        switch (self, plane) {
        case (.bgra, 0): return width * 4
        case (.nv12, 0), (.i420, 0): return width
        case (.nv12, 1): return chromaWidth * 2
        case (.i420, _): return chromaWidth
        default: return 0
        }
    }

    /// Rows in `plane` for a frame `height` tall (chroma planes round up).
    public func rows(plane: Int, height: Int) -> Int {
        plane == 0 ? height : (height + 1) / 2
    }
}
