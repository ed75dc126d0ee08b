/// A type an option's text becomes, with how its values are described in
/// error lines ("a whole number").
import FrameRelayFrames

public protocol ArgumentValue {
    init?(argument: String)
    static var expectation: String { get }
}

extension Int: ArgumentValue {
    public init?(argument: String) { self.init(argument) }
    public static var expectation: String { "a whole number" }
}

extension UInt64: ArgumentValue {
    public init?(argument: String) { self.init(argument) }
    public static var expectation: String { "a whole number" }
}

extension Double: ArgumentValue {
    public init?(argument: String) {
        guard let value = Double(argument), value.isFinite else { return nil }
        self = value
    }
    public static var expectation: String { "a number" }
}

extension String: ArgumentValue {
    public init?(argument: String) { self = argument }
    public static var expectation: String { "text" }
}

/// Named values: the spelling is the name, and errors list them all.
extension PixelFormat: ArgumentValue {
    public init?(argument: String) { self.init(name: argument) }
    public static var expectation: String { "one of " + allCases.map(\.description).joined(separator: ", ") }
}

extension Orientation: ArgumentValue {
    public init?(argument: String) { self.init(name: argument) }
    public static var expectation: String { "one of " + allCases.map(\.description).joined(separator: ", ") }
}
