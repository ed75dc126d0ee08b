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
    /// Text after the options (subcommands, examples).
    public var epilog: String?
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

    /// The help: every option on lines that fit 80 columns.
    public var usage: String {
        var lines = Self.wrap("\(command): \(summary)", width: 80, indent: "  ") + ["", "Options:"]
        for option in options {
            var left = "  --\(option.name)"
            if let value = option.valueName { left += " \(value)" }
            var right = option.help
            // "(default: VALUE)" is kept on one line where it fits: its space is no break point then.
            if let value = option.defaultValue { right += " (default:" + (value.count < 38 ? "\u{0}" : " ") + "\(value))" }
            if option.repeatable { right += " (repeatable)" }
            let column = String(repeating: " ", count: 30)
            let wrapped = Self.wrap(right, width: 50, indent: "").map { String($0.map { $0 == "\u{0}" ? " " : $0 }) }
            if left.count <= 28 {
                lines.append(left + String(repeating: " ", count: 30 - left.count) + wrapped[0])
            } else {
                lines.append(left)
                lines.append(column + wrapped[0])
            }
            lines += wrapped.dropFirst().map { column + $0 }
        }
        lines.append("  --help                      Show this help.")
        if let epilog { lines += ["", epilog] }
        return lines.joined(separator: "\n")
    }

    /// `text` broken at spaces into lines of at most `width` characters (a
    /// longer word stands alone), continuation lines starting with `indent`.
    static func wrap(_ text: String, width: Int, indent: String) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let prefix = lines.isEmpty ? "" : indent
            if !line.isEmpty, prefix.count + line.count + 1 + word.count > width {
                lines.append(prefix + line)
                line = String(word)
            } else {
                line += (line.isEmpty ? "" : " ") + word
            }
        }
        lines.append((lines.isEmpty ? "" : indent) + line)
        return lines
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

/// `--help` (or `--version`) was given; `text` is what to print before exiting 0.
public struct HelpRequested: Error {
    public let text: String
    public init(text: String) { self.text = text }
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
