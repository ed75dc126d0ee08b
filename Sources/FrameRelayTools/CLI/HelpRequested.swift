/// `--help` (or `--version`) was given; `text` is what to print before exiting 0.
public struct HelpRequested: Error {
    public let text: String
    public init(text: String) { self.text = text }
}
