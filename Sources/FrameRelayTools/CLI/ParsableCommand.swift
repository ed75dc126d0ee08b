import FrameRelaySystem

/// A command (or subcommand) in swift-argument-parser's shape, written here
/// because no outside package can be fetched: its options are ``Option``
/// and ``Flag`` properties. Parsing runs in three steps, so that the
/// likeliest mistake is the one named: ``checkGiven()`` sees only which
/// options were given ("--sdp needs --rtp"); then each option's text
/// becomes its value, checked against its range; then ``validate()``
/// checks the values together and fills what is derived from them.
/// ``run()`` does the work and returns the exit status.
public protocol ParsableCommand {
    static var configuration: CommandConfiguration { get }
    init()
    func checkGiven() throws
    mutating func validate() throws
    func run() throws -> Int32
}

/// A command's name, one-line summary, and text after its options; for a
/// command of subcommands (swift-argument-parser's `subcommands:`), the
/// subcommands, declared once: the dispatch, the help's list and the
/// unknown-subcommand line all come from here.
public struct CommandConfiguration: @unchecked Sendable {
    // @unchecked Sendable: the subcommands are metatypes, set once in a static let and only read.
    public var commandName: String
    public var abstract: String
    /// Whether the program takes `--version` (its help lists it with `--help`).
    public var takesVersion: Bool
    public var subcommands: [any ParsableCommand.Type]
    /// Run when the first argument names no subcommand.
    public var defaultSubcommand: (any ParsableCommand.Type)?

    public init(commandName: String, abstract: String, takesVersion: Bool = false,
                subcommands: [any ParsableCommand.Type] = [], defaultSubcommand: (any ParsableCommand.Type)? = nil) {
        self.commandName = commandName
        self.abstract = abstract
        self.takesVersion = takesVersion
        self.subcommands = subcommands
        self.defaultSubcommand = defaultSubcommand
    }

    /// How it is named as a subcommand: its command name's last word ("frame-relay [run]": run).
    public var name: String { String((commandName.split(separator: " ").last ?? "").filter { $0 != "[" && $0 != "]" }) }
}

extension ParsableCommand {
    public func checkGiven() throws {}
    public mutating func validate() throws {}

    /// The command with `arguments` parsed and validated; throws a
    /// ``UsageError`` for bad input and ``HelpRequested`` for `--help`.
    public static func parse(_ arguments: [String]) throws -> Self {
        var command = Self()
        let declared = command.declarations
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" { throw HelpRequested(text: helpText) }
            if argument == "--version", configuration.takesVersion { throw HelpRequested(text: versionText) }
            guard argument.hasPrefix("--"), argument != "--" else {
                // One dash for two: -http.
                let bare = String(argument.drop { $0 == "-" }.prefix { $0 != "=" })
                if argument.hasPrefix("-"), declared.contains(where: { $0.name == bare }) { throw UsageError("unknown option -\(bare): did you mean --\(bare)?") }
                throw UsageError("unexpected argument \"\(PeerText.quoted(argument, limit: 64))\" (see --help)")
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = declared.first(where: { $0.name == name }) else {
                let guess = EditDistance.nearest(to: name, among: declared.map(\.name) + ["help"]).map { ": did you mean --\($0)?" } ?? " (see --help)"
                throw UsageError("unknown option --\(PeerText.quoted(name, limit: 64))\(guess)")
            }
            if let valueName = option.valueName {
                if let inline {
                    try option.take(inline)
                } else {
                    index += 1
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value \(valueName)") }
                    // An option where the value should be: the value was left out (not "unexpected argument" for the next one's value).
                    let next = arguments[index]
                    if next.hasPrefix("--"), case let other = String(next.dropFirst(2).prefix { $0 != "=" }), other == "help" || declared.contains(where: { $0.name == other }) {
                        throw UsageError("--\(name) needs a value \(valueName) (it is followed by --\(other))")
                    }
                    try option.take(next)
                }
            } else {
                guard inline == nil else { throw UsageError("--\(name) takes no value (given \"\(argument)\")") }
                try option.take("")
            }
            index += 1
        }
        try command.checkGiven()
        for option in declared { try option.convert() }
        try command.validate()
        return command
    }

    /// Every option and flag, in the order they are declared.
    var declarations: [ArgumentDefinition] {
        Mirror(reflecting: self).children.compactMap { ($0.value as? ArgumentDeclaration)?.definition }
    }

    /// The help: every option on lines that fit 80 columns.
    public static var helpText: String { helpText(version: configuration.takesVersion) }

    /// What `--version` prints: the program and its version.
    static var versionText: String { "\(configuration.commandName.split(separator: " ").first ?? "") \(FrameRelayVersion.string)" }

    /// The help, listing `--version` after `--help` where the program takes it.
    static func helpText(version: Bool) -> String {
        let configuration = Self.configuration
        var lines = wrap("\(configuration.commandName): \(configuration.abstract)", width: 80, indent: "  ") + ["", "Options:"]
        for option in Self().declarations {
            var left = "  --\(option.name)"
            if let value = option.valueName { left += " \(value)" }
            var right = option.help
            // "(default: VALUE)" is kept on one line where it fits: its space is no break point then.
            if let value = option.defaultText { right += " (default:" + (value.count < 38 ? "\u{0}" : " ") + "\(value))" }
            if option.repeatable, !right.contains("repeatable") { right += " (repeatable)" }
            let column = String(repeating: " ", count: 30)
            let wrapped = wrap(right, width: 50, indent: "").map { String($0.map { $0 == "\u{0}" ? " " : $0 }) }
            if left.count <= 28 {
                lines.append(left + String(repeating: " ", count: 30 - left.count) + wrapped[0])
            } else {
                lines.append(left)
                lines.append(column + wrapped[0])
            }
            lines += wrapped.dropFirst().map { column + $0 }
        }
        lines.append("  --help                      Show this help.")
        if version { lines.append("  --version                   Print the version.") }
        return lines.joined(separator: "\n")
    }
}

extension ParsableCommand {
    /// The subcommands, a line each (name, then summary, wrapped at 80 columns), as help lists them.
    public static var subcommandListing: String {
        let configuration = Self.configuration
        let program = String(configuration.commandName.split(separator: " ").first ?? "")
        var entries = configuration.subcommands.map { command in
            let isDefault = configuration.defaultSubcommand.map { ObjectIdentifier($0) == ObjectIdentifier(command) } ?? false
            return (command.configuration.name + (isDefault ? " (default)" : ""), command.configuration.abstract)
        }
        entries.append(("help [SUBCOMMAND]", "this help, or a subcommand's"))
        var lines = ["Subcommands (\(program) SUBCOMMAND --help for each):"]
        for (name, abstract) in entries {
            let left = "  " + name + String(repeating: " ", count: max(1, 19 - name.count))
            let wrapped = wrap(abstract, width: 80 - left.count, indent: "")
            lines.append(left + wrapped[0])
            lines += wrapped.dropFirst().map { String(repeating: " ", count: left.count) + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// The subcommand called `name`, or one line saying which names there are (and the nearest).
    static func subcommand(named name: String) throws -> any ParsableCommand.Type {
        let commands = Self.configuration.subcommands
        if let found = commands.first(where: { $0.configuration.name == name }) { return found }
        let names = commands.map { $0.configuration.name } + ["help"]
        let guess = EditDistance.nearest(to: name, among: names).map { "did you mean \($0)? " } ?? ""
        throw UsageError("unknown subcommand \"\(PeerText.quoted(name, limit: 64))\": \(guess)\(names.joined(separator: ", ")) (see --help)")
    }

    /// Runs `arguments` on the subcommand they name (or the default one),
    /// `help [SUBCOMMAND]` and `--help` with the subcommands listed; an
    /// unknown name is one line with the nearest one and the list.
    public static func dispatch(_ arguments: [String]) throws -> Int32 {
        let configuration = Self.configuration
        var arguments = arguments
        let named = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
        if named != nil { arguments.removeFirst() }
        guard let defaultCommand = configuration.defaultSubcommand ?? configuration.subcommands.first else { throw UsageError("no subcommands") }
        // The program's help: its default subcommand's options, `--version` (the program's own), the subcommands.
        let general = defaultCommand.helpText(version: true) + "\n\n" + subcommandListing
        if named == "help" {
            // `help SUBCOMMAND`: that one's help (`help`, `help help` and `help --help`: the whole program's).
            guard arguments.count <= 1 else {
                throw UsageError("unexpected argument \"\(PeerText.quoted(arguments[1], limit: 64))\" after help \(PeerText.quoted(arguments[0], limit: 64))")
            }
            let topic = arguments.first.flatMap { ["help", "--help", "-h"].contains($0) ? nil : $0 }
            throw HelpRequested(text: try topic.map { try subcommand(named: $0).helpText } ?? general)
        }
        // The program's --version, among its default subcommand's options as anywhere `--help` may be.
        if named == nil, arguments.contains("--version") { throw HelpRequested(text: versionText) }
        let chosen = try named.map { try subcommand(named: $0) } ?? defaultCommand
        do {
            return try chosen.parse(arguments).run()
        } catch is HelpRequested where named == nil {
            // The default subcommand's --help is the program's: it lists the others too.
            throw HelpRequested(text: general)
        }
    }
}

/// `text` broken at spaces into lines of at most `width` characters (a
/// longer word stands alone), continuation lines starting with `indent`.
func wrap(_ text: String, width: Int, indent: String) -> [String] {
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
