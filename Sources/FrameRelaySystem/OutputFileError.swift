/// Why an output file the user named (`--option PATH`) cannot be written.
public struct OutputFileError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var option: String
    public var reason: String

    public var description: String { "cannot write --\(option) \(path): \(reason)" }
}
