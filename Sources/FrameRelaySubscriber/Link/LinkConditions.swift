/// What a group of viewers' link does to packets, as `--viewer-link`
/// states it: `loss=2%,delay=40ms,jitter=10ms,rate=3mbit` (every part
/// optional). Loss, delay and jitter apply both ways, so Janus sees the
/// round trip; the rate limits what comes in (the viewer's downlink). A
/// part ending `@T` applies from T on (from the link's first packet):
/// `rate=5mbit@0s,rate=1mbit@20s,rate=5mbit@40s` drops to 1 Mbit/s for 20 s.
public struct LinkConditions: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Fraction of packets dropped, each way (0–1).
    public var loss = 0.0
    /// One-way delay, ns.
    public var delay: UInt64 = 0
    /// Each packet's delay varies by up to this much either way (uniform), ns.
    public var jitter: UInt64 = 0
    /// Downlink rate in bits per second (0: unlimited).
    public var rate: UInt64 = 0
    /// How long a packet may wait for the rate before it is dropped (a
    /// router's queue; tbf's `latency`), ns.
    public var queue: UInt64 = 50_000_000
    /// What the link becomes later, in time order: each change's time (ns from the first packet) and the conditions from then on.
    public var changes: [Change] = []

    public struct Change: Sendable, Equatable, Codable {
        public var at: UInt64
        public var conditions: LinkConditions
    }

    public init() {}

    /// The conditions `elapsed` ns after the link's first packet.
    public func at(_ elapsed: UInt64) -> LinkConditions { changes.last { $0.at <= elapsed }?.conditions ?? self }

    /// A perfect link, and one that stays so.
    public var isPerfect: Bool { loss == 0 && delay == 0 && jitter == 0 && rate == 0 && changes.isEmpty }

    /// Parses `text`; throws one line naming the part that is wrong.
    public init(parsing text: String) throws(LinkConditionsError) {
        if text == "perfect" || text.isEmpty { return }
        // Parts by the time they apply from (0: from the start), in the order given.
        var timed: [(at: UInt64, part: Substring)] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw LinkConditionsError(text: text, reason: "an empty part (two commas, or one at an end)") }
            guard let mark = part.lastIndex(of: "@") else {
                timed.append((0, part))
                continue
            }
            guard let at = Self.duration(String(part[part.index(after: mark)...]), limit: 24 * 3600 * 1e9) else {
                throw LinkConditionsError(text: text, reason: "\"\(part)\": the time after @ is not a duration such as 20s")
            }
            timed.append((at, part[..<mark]))
        }
        // One value for each thing at each time: a second would silently win.
        var named = Set<String>()
        for entry in timed {
            let name = entry.part.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            guard named.insert("\(name)@\(entry.at)").inserted else {
                throw LinkConditionsError(text: text, reason: "\(name) is given twice\(entry.at == 0 ? "" : " for the same time")")
            }
        }
        // A queue is where packets wait for the rate: with no rate at any time, it would do nothing, silently.
        if named.contains(where: { $0.hasPrefix("queue@") }), !named.contains(where: { $0.hasPrefix("rate@") }) {
            throw LinkConditionsError(text: text, reason: "queue applies only with a rate (rate=1mbit,queue=300ms)")
        }
        let times = Set(timed.map(\.at)).sorted()
        for time in times {
            var conditions = time == 0 ? LinkConditions() : at(time)
            conditions.changes = []
            for entry in timed where entry.at == time { try conditions.apply(entry.part, of: text) }
            if conditions.jitter > conditions.delay { throw LinkConditionsError(text: text, reason: "jitter is larger than delay (a packet cannot arrive before it was sent)") }
            if time == 0 {
                (loss, delay, jitter, rate, queue) = (conditions.loss, conditions.delay, conditions.jitter, conditions.rate, conditions.queue)
            } else {
                changes.append(Change(at: time, conditions: conditions))
            }
        }
    }

    /// Sets one `NAME=VALUE` part of `text`.
    private mutating func apply(_ part: Substring, of text: String) throws(LinkConditionsError) {
        let pair = part.split(separator: "=", maxSplits: 1)
        guard pair.count == 2 else { throw LinkConditionsError(text: text, reason: "\"\(part)\" is not NAME=VALUE") }
        let name = pair[0], value = String(pair[1])
        switch name {
        case "loss":
            guard value.hasSuffix("%"), let percent = Self.decimal(value.dropLast()), (0...100).contains(percent) else {
                throw LinkConditionsError(text: text, reason: "loss \"\(value)\" is not a percentage such as 2%")
            }
            loss = percent / 100
        case "delay", "jitter", "queue":
            guard let nanoseconds = Self.duration(value) else {
                throw LinkConditionsError(text: text, reason: "\(name) \"\(value)\" is not a duration such as 40ms")
            }
            if name == "delay" { delay = nanoseconds } else if name == "jitter" { jitter = nanoseconds } else { queue = nanoseconds }
        case "rate":
            guard let bits = Self.rate(value), bits > 0 else {
                throw LinkConditionsError(text: text, reason: "rate \"\(value)\" is not a rate such as 3mbit or 500kbit")
            }
            rate = bits
        default:
            throw LinkConditionsError(text: text, reason: "unknown \"\(name)\": loss, delay, jitter, rate or queue")
        }
    }

    /// "40ms", "1.5s", "500us" → ns (to the nearest: 1.001s is 1001ms), at most `limit` ns.
    private static func duration(_ text: String, limit: Double = 60 * 1e9) -> UInt64? {
        for (unit, scale) in [("ms", 1e6), ("us", 1e3), ("s", 1e9)] where text.hasSuffix(unit) {
            guard let value = decimal(text.dropLast(unit.count)), value <= limit / scale else { return nil }
            return UInt64((value * scale).rounded())
        }
        return nil
    }

    /// "3mbit", "500kbit", "1gbit", "64000bit" → bits/s.
    private static func rate(_ text: String) -> UInt64? {
        for (unit, scale) in [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)] where text.lowercased().hasSuffix(unit) {
            guard let value = decimal(text.dropLast(unit.count)), value > 0, value * scale <= 1e11 else { return nil }
            return UInt64((value * scale).rounded())
        }
        return nil
    }

    /// A plain decimal number ("20", "1.5", ".5"): digits with at most one point, none of what
    /// `Double(_:)` also reads (0x10, 1e3, inf, nan, a sign).
    private static func decimal(_ text: Substring) -> Double? {
        let digit: (Character) -> Bool = { ("0"..."9").contains($0) }
        guard text.contains(where: digit), text.allSatisfy({ digit($0) || $0 == "." }), text.filter({ $0 == "." }).count <= 1 else { return nil }
        return Double(text)
    }

    /// The canonical text (what the reports show): a change names what it changes, with its time.
    public var description: String {
        guard !isPerfect else { return "perfect" }
        var previous = fields
        var all = parts
        for change in changes {
            let now = change.conditions.fields
            let time = "@\(Self.trim(Double(change.at) / 1e9))s"
            // Every part that changed, a change back to none included (loss=0%@10s), so the text reads back as the same link.
            all += now.filter { field in previous.first { $0.key == field.key }?.text != field.text }.map { $0.text + time }
            previous = now
        }
        return all.isEmpty ? "perfect" : all.joined(separator: ",")
    }

    /// The parts of the conditions in force from the start (those that are not none).
    private var parts: [String] {
        fields.filter { !$0.none }.map(\.text)
    }

    /// Each part, none or not: its name, its text, and whether it is none (the default).
    private var fields: [(key: String, text: String, none: Bool)] {
        var fields: [(key: String, text: String, none: Bool)] = [
            ("loss", "loss=\(Self.trim(loss * 100))%", loss == 0),
            ("delay", "delay=\(Self.trim(Double(delay) / 1e6))ms", delay == 0),
            ("jitter", "jitter=\(Self.trim(Double(jitter) / 1e6))ms", jitter == 0),
        ]
        if rate > 0 {
            fields.append(("rate", rate % 1_000_000 == 0 ? "rate=\(rate / 1_000_000)mbit" : "rate=\(Self.trim(Double(rate) / 1e3))kbit", false))
            fields.append(("queue", "queue=\(Self.trim(Double(queue) / 1e6))ms", queue == 50_000_000))
        }
        return fields
    }

    private static func trim(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

/// A `--viewer-link` that cannot be read.
public struct LinkConditionsError: Error, CustomStringConvertible {
    public var text: String
    public var reason: String
    public var description: String { "invalid link \"\(text)\": \(reason)" }
}
