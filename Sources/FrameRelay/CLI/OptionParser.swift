/// A small command-line parser in the shape of swift-argument-parser's
/// results: `--name value` and `--flag` options, each declared with its help
/// and default, a generated `--help`, and one readable error line for bad input.
public struct OptionParser {
    public struct Option {
        let name: String
        let valueName: String?
        let help: String
        let defaultValue: String?
        let repeatable: Bool
    }

    public let command: String
    public let summary: String
    private var options: [Option] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    public init(command: String, summary: String) {
        self.command = command
        self.summary = summary
    }

    /// Declares `--name VALUE`.
    public mutating func option(_ name: String, _ valueName: String, default defaultValue: String? = nil, repeatable: Bool = false, help: String) {
        options.append(Option(name: name, valueName: valueName, help: help, defaultValue: defaultValue, repeatable: repeatable))
    }

    /// Declares `--name` without a value.
    public mutating func flag(_ name: String, help: String) {
        options.append(Option(name: name, valueName: nil, help: help, defaultValue: nil, repeatable: false))
    }

    public var usage: String {
        var lines = ["\(command): \(summary)", "", "Options:"]
        for option in options {
            var left = "  --\(option.name)"
            if let value = option.valueName { left += " \(value)" }
            var right = option.help
            if let value = option.defaultValue { right += " (default: \(value))" }
            if option.repeatable { right += " (repeatable)" }
            lines.append(left + String(repeating: " ", count: max(2, 30 - left.count)) + right)
        }
        lines.append("  --help                      Show this help.")
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments`; throws ``UsageError`` for unknown options or
    /// missing values, and ``HelpRequested`` for `--help`.
    public mutating func parse(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" { throw HelpRequested(text: usage) }
            guard argument.hasPrefix("--") else { throw UsageError("unexpected argument \"\(argument)\" (see --help)") }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option --\(name) (see --help)")
            }
            if option.valueName == nil {
                guard inline == nil else { throw UsageError("--\(name) takes no value (given \"\(argument)\")") }
                flags.insert(name)
            } else {
                let value: String
                if let inline {
                    value = inline
                } else {
                    index += 1
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value \(option.valueName!)") }
                    value = arguments[index]
                }
                if !option.repeatable, values[name] != nil { throw UsageError("--\(name) given twice") }
                values[name, default: []].append(value)
            }
            index += 1
        }
    }

    /// The value of `--name`, or its default.
    public func string(_ name: String) -> String? {
        values[name]?.last ?? options.first { $0.name == name }?.defaultValue
    }

    /// Every value of a repeatable option (its default when none was given).
    public func strings(_ name: String) -> [String] {
        values[name] ?? (string(name).map { [$0] } ?? [])
    }

    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// Whether the user gave `--name`.
    public func given(_ name: String) -> Bool { values[name] != nil || flags.contains(name) }

    /// An integer option within `range`.
    public func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError("invalid --\(name) \"\(text)\": expected a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A number option within `range`.
    public func double(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError("invalid --\(name) \"\(text)\": expected a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }
}

/// Bad command-line input: one line for the user.
public struct UsageError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// `--help` was given; `text` is the usage to print.
public struct HelpRequested: Error {
    public let text: String
}

/// Parses `WIDTHxHEIGHT` (1…16383 each).
public func parseSize(_ text: String, option: String) throws -> (width: Int, height: Int) {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else {
        throw UsageError("invalid --\(option) \"\(text)\": expected WIDTHxHEIGHT, for example 1280x720")
    }
    guard (1...FrameMetadata.maxDimension).contains(w), (1...FrameMetadata.maxDimension).contains(h) else {
        throw UsageError("invalid --\(option) \"\(text)\": width and height must be 1...\(FrameMetadata.maxDimension)")
    }
    return (w, h)
}
