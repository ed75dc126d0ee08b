/// How the captured pixels are turned relative to the upright picture:
/// ReplayKit's `RPVideoSampleOrientationKey`, a `CGImagePropertyOrientation`.
///
/// The raw values are Core Graphics' and are stored in shared memory.
public enum Orientation: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case up = 1
    case upMirrored = 2
    case down = 3
    case downMirrored = 4
    case leftMirrored = 5
    case right = 6
    case rightMirrored = 7
    case left = 8

    /// Parses the command-line spelling (`up`, `down`, `left`, `right`, `up-mirrored`, …).
    public init?(name: String) {
        guard let orientation = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = orientation
    }

    public var description: String {
        switch self {
        case .up: "up"
        case .upMirrored: "up-mirrored"
        case .down: "down"
        case .downMirrored: "down-mirrored"
        case .leftMirrored: "left-mirrored"
        case .right: "right"
        case .rightMirrored: "right-mirrored"
        case .left: "left"
        }
    }

    /// Degrees to turn the stored pixels clockwise, after mirroring them
    /// horizontally when ``isMirrored``, to make the picture upright.
    public var clockwiseDegreesToUpright: Int {
        switch self {
        case .up, .upMirrored: 0
        case .down, .downMirrored: 180
        case .right, .rightMirrored: 90
        case .left, .leftMirrored: 270
        }
    }

    /// Whether the stored pixels are mirrored left to right.
    public var isMirrored: Bool {
        switch self {
        case .upMirrored, .downMirrored, .leftMirrored, .rightMirrored: true
        default: false
        }
    }

    /// Whether upright width and height are the stored height and width.
    public var swapsDimensions: Bool { clockwiseDegreesToUpright % 180 != 0 }
}
