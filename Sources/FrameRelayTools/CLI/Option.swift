/// `--name VALUE`, declared on a command's property in swift-argument-parser's
/// shape: its name, its value's name, its help, its default (the property's
/// initial value), and the range it must be in, checked once, when parsed.
///
/// ```swift
/// @Option("bitrate", "KBPS", in: 1...100_000, help: "VP8 target bitrate.") var bitrate = 2500
/// @Option("threads", "N", in: 1...16, help: "Encoder threads.") var threads: Int?
/// @Option("rtp", "HOST:PORT", help: "…", transform: Destination.init) var destinations: [Destination] = []
/// ```
/// An array option is repeatable; the values given replace its default.
@propertyWrapper
public struct Option<Value>: ArgumentDeclaration, OptionPresence {
    let definition: ArgumentDefinition
    private let storage: ArgumentStorage<Value>

    public var wrappedValue: Value { storage.value }
    /// The option itself: `$bitrate.isGiven`.
    public var projectedValue: Option<Value> { self }
    /// Whether the command line gave it (a default does not count).
    public var isGiven: Bool { definition.isGiven }
    public var name: String { definition.name }

    private init(
        _ value: Value, _ name: String, _ valueName: String, help: String, defaultText: String?, repeatable: Bool = false,
        _ accept: @escaping (String, ArgumentStorage<Value>, _ first: Bool) throws(UsageError) -> Void
    ) {
        let storage = ArgumentStorage(value)
        self.storage = storage
        definition = ArgumentDefinition(name: name, valueName: valueName, help: help, defaultText: defaultText, repeatable: repeatable) { text, first throws(UsageError) in
            try accept(text, storage, first)
        }
    }

    /// A value of `type`, in `range` when one is given.
    private static func parse<V: ArgumentValue>(_ text: String, _ name: String, as type: V.Type, check: (V) -> Bool, range: String) throws(UsageError) -> V {
        guard let value = V(argument: text), check(value) else {
            throw UsageError("invalid --\(name) \"\(text)\": expected \(V.expectation)\(range.isEmpty ? "" : " in \(range)")")
        }
        return value
    }

    /// `transform`'s value; its error is the option's, as it reads (it names what was wrong).
    private static func transformed<V>(_ text: String, _ transform: (String) throws -> V) throws(UsageError) -> V {
        do {
            return try transform(text)
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError("\(error)")
        }
    }
}

extension Option where Value: ArgumentValue {
    public init(wrappedValue: Value, _ name: String, _ valueName: String, help: String) {
        self.init(wrappedValue, name, valueName, help: help, defaultText: describe(wrappedValue)) { text, storage, _ throws(UsageError) in
            storage.value = try Self.parse(text, name, as: Value.self, check: { _ in true }, range: "")
        }
    }
}

extension Option where Value: ArgumentValue & Comparable {
    public init(wrappedValue: Value, _ name: String, _ valueName: String, in range: ClosedRange<Value>, help: String) {
        self.init(wrappedValue, name, valueName, help: help, defaultText: describe(wrappedValue)) { text, storage, _ throws(UsageError) in
            storage.value = try Self.parse(text, name, as: Value.self, check: range.contains, range: "\(range.lowerBound)...\(range.upperBound)")
        }
    }
}

extension Option {
    /// An option without a default: nil unless given.
    public init<W: ArgumentValue>(_ name: String, _ valueName: String, help: String) where Value == W? {
        self.init(nil, name, valueName, help: help, defaultText: nil) { text, storage, _ throws(UsageError) in
            storage.value = try Self.parse(text, name, as: W.self, check: { _ in true }, range: "")
        }
    }

    public init<W: ArgumentValue & Comparable>(_ name: String, _ valueName: String, in range: ClosedRange<W>, help: String) where Value == W? {
        self.init(nil, name, valueName, help: help, defaultText: nil) { text, storage, _ throws(UsageError) in
            storage.value = try Self.parse(text, name, as: W.self, check: range.contains, range: "\(range.lowerBound)...\(range.upperBound)")
        }
    }

    /// A repeatable option: every value given, in order (its default when none is).
    public init<W: ArgumentValue>(wrappedValue: [W], _ name: String, _ valueName: String, help: String) where Value == [W] {
        self.init(wrappedValue, name, valueName, help: help, defaultText: wrappedValue.first.map(describe), repeatable: true) { text, storage, first throws(UsageError) in
            if first { storage.value = [] }
            storage.value.append(try Self.parse(text, name, as: W.self, check: { _ in true }, range: ""))
        }
    }

    /// A value made by `transform` (a size, an address, a destination).
    public init(wrappedValue: Value, _ name: String, _ valueName: String, help: String, default text: String? = nil, transform: @escaping (String) throws -> Value) {
        self.init(wrappedValue, name, valueName, help: help, defaultText: text) { argument, storage, _ throws(UsageError) in
            storage.value = try Self.transformed(argument, transform)
        }
    }

    /// A value made by `transform`, nil unless given.
    public init<W>(_ name: String, _ valueName: String, help: String, transform: @escaping (String) throws -> W) where Value == W? {
        self.init(nil, name, valueName, help: help, defaultText: nil) { argument, storage, _ throws(UsageError) in
            storage.value = try Self.transformed(argument, transform)
        }
    }

    /// A repeatable value made by `transform`.
    public init<W>(wrappedValue: [W], _ name: String, _ valueName: String, help: String, default text: String? = nil, transform: @escaping (String) throws -> W) where Value == [W] {
        self.init(wrappedValue, name, valueName, help: help, defaultText: text, repeatable: true) { argument, storage, first throws(UsageError) in
            if first { storage.value = [] }
            storage.value.append(try Self.transformed(argument, transform))
        }
    }
}

/// `--name` without a value: true when given.
@propertyWrapper
public struct Flag: ArgumentDeclaration, OptionPresence {
    let definition: ArgumentDefinition
    private let storage = ArgumentStorage(false)

    public var wrappedValue: Bool { storage.value }
    public var projectedValue: Flag { self }
    public var isGiven: Bool { definition.isGiven }
    public var name: String { definition.name }

    public init(_ name: String, help: String) {
        let storage = self.storage
        definition = ArgumentDefinition(name: name, valueName: nil, help: help, defaultText: nil, repeatable: false) { _, _ throws(UsageError) in
            storage.value = true
        }
    }
}

/// Whether an option or flag was given, for checks across options
/// ("--sdp needs --rtp"), whatever its value's type.
public protocol OptionPresence {
    var isGiven: Bool { get }
    var name: String { get }
}

/// An option's or flag's declaration, as the parser and the help read it.
final class ArgumentDefinition {
    let name: String
    /// nil for a flag.
    let valueName: String?
    let help: String
    let defaultText: String?
    let repeatable: Bool
    /// The texts given for it, in order ("" for a flag).
    private(set) var given: [String] = []
    var isGiven: Bool { !given.isEmpty }
    private let accept: (String, _ first: Bool) throws(UsageError) -> Void

    init(name: String, valueName: String?, help: String, defaultText: String?, repeatable: Bool, accept: @escaping (String, Bool) throws(UsageError) -> Void) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.defaultText = defaultText
        self.repeatable = repeatable
        self.accept = accept
    }

    /// Takes one occurrence from the command line (`text` is "" for a flag).
    func take(_ text: String) throws(UsageError) {
        if isGiven, !repeatable { throw UsageError("--\(name) given twice") }
        given.append(text)
    }

    /// Turns the texts taken into the option's value, checking each.
    func convert() throws(UsageError) {
        for (index, text) in given.enumerated() { try accept(text, index == 0) }
    }
}

/// What an option holds: shared by the command value and the parser that fills it.
final class ArgumentStorage<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Options and flags, found on a command by reflection.
protocol ArgumentDeclaration {
    var definition: ArgumentDefinition { get }
}

/// A default as the help shows it (3, not 3.0).
private func describe<V>(_ value: V) -> String {
    if let number = value as? Double, number == number.rounded(), abs(number) < 1e15 { return String(Int(number)) }
    return "\(value)"
}
