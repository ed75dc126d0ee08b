@preconcurrency import Glibc
import FrameRelaySystem

/// The host's live status: on a terminal, one line per share redrawn in
/// place and cut to the terminal's width (the most useful figures first);
/// elsewhere (a CI log, a pipe), one plain line per share every
/// ``plainInterval``. Latencies are all in milliseconds.
public final class StatusLine {
    public let isEnabled: Bool
    private let isTerminal: Bool
    private var linesDrawn = 0
    private var lastPlain: UInt64 = 0
    /// Each share's encoded bytes as its figures were published (and when), over the last second or so, for the bitrate.
    private var samples: [String: [(time: UInt64, bytes: UInt64)]] = [:]
    /// How often a plain line is written when stderr is not a terminal.
    public static let plainInterval: UInt64 = 2_000_000_000

    public init(enabled: Bool = true) {
        isEnabled = enabled
        isTerminal = StandardError.isTerminal
    }

    /// Redraws the display with these shares (a plain line every few seconds off a terminal).
    public func update(_ shares: [ShareStats]) {
        guard isEnabled else { return }
        let now = MonotonicClock.now()
        let rates = shares.map { bitrate($0) }
        if !isTerminal {
            guard now &- lastPlain >= Self.plainInterval else { return }
            lastPlain = now
            writeStandardError(zip(shares, rates).map { "frame-relay: " + Self.format($0, kbps: $1) + "\n" }.joined())
            return
        }
        let width = StandardError.terminalWidth()
        var text = linesDrawn > 0 ? "\u{1B}[\(linesDrawn)A" : ""
        for (share, kbps) in zip(shares, rates) {
            text += "\u{1B}[2K" + Self.format(share, kbps: kbps, width: width - 1) + "\n"
        }
        linesDrawn = shares.count
        writeStandardError(text)
    }

    /// kbit/s of encoded VP8, every layer's, over the last second (to a quarter more) of
    /// this share's published figures, their bytes and time from one
    /// publication each (the time a line is drawn, read against bytes
    /// published up to 250 ms before, swung it by a fifth); nil before a
    /// second from its first frame.
    func bitrate(_ share: ShareStats) -> Double? {
        guard let bytes = share.encoded?.allLayersBytes, share.taken > 0 else { return nil }
        var list = samples[share.appGroup, default: []]
        // A new encoder (the share's pipeline made anew) counts from nothing again.
        if let last = list.last, bytes < last.bytes || share.publishedAt < last.time { list.removeAll() }
        if list.last?.time != share.publishedAt { list.append((share.publishedAt, bytes)) }
        // The newest sample a second or more old is the window's start.
        while list.count > 2, share.publishedAt - list[1].time >= 1_000_000_000 { list.removeFirst() }
        samples[share.appGroup] = list
        guard let first = list.first, share.publishedAt - first.time >= 1_000_000_000 else { return nil }
        return Double(bytes - first.bytes) * 8 / 1000 / (Double(share.publishedAt - first.time) / 1e9)
    }

    /// Clears the display before normal output.
    public func clear() {
        guard isEnabled, isTerminal, linesDrawn > 0 else { return }
        var text = "\u{1B}[\(linesDrawn)A"
        for _ in 0..<linesDrawn { text += "\u{1B}[2K\n" }
        text += "\u{1B}[\(linesDrawn)A"
        linesDrawn = 0
        writeStandardError(text)
    }

    /// One share as a line of fields, most useful first, that fits `width`
    /// (the fields that do not fit are left out, never cut in the middle).
    /// The fields come in one order from the first line on; a figure not yet
    /// measured is "–", never 0: a latency before it has a frame, frames/s
    /// before two frames, kbit/s (`kbps` nil) before a second of them.
    /// The `summary` at exit gives frames/s whatever the producer's state (the state after it).
    public static func format(_ s: ShareStats, kbps: Double? = nil, width: Int = .max, summary: Bool = false) -> String {
        func ms(_ latency: LatencySummary, _ micros: Double) -> String {
            latency.count == 0 ? "–" : fixed(micros / 1000, micros < 10_000 ? 2 : 1) + " ms"
        }
        func percentiles(_ latency: LatencySummary) -> String {
            latency.count == 0 ? "p50 – p99 –" : "p50 \(fixed(latency.p50 / 1000, 2)) p99 \(ms(latency, latency.p99))"
        }
        // The figures an 80-column terminal must show come first: frames/s, dropped, capture→encoded
        // p50 and p99. On a terminal (a width given) a long App Group keeps only its end (its start
        // is the team's reverse domain, the same for every share).
        var name = s.appGroup
        if width < .max, name.count > width / 5, width >= 24 { name = "…" + String(name.suffix(width / 5 - 1)) }
        let rate = s.framesTimed == 0 ? "– fps" : "\(fixed(s.fps, 1)) fps"
        let state = s.producerAttaches == 0 ? "waiting for producer" : s.producerFinished ? "producer finished"
            : s.producerPaused ? "producer paused" : s.producerGone ? "producer gone" : rate
        var fields = summary ? [name, rate] + (state == rate ? [] : [state]) : [name, state]
        fields.append("dropped \(s.totalDropped)")
        if let encoded = s.encoded {
            // Skipped (nothing changed, not encoded) is apart from dropped (replaced in the ring before the host took it).
            fields += [
                "capture→encoded \(percentiles(encoded.captureToEncoded))",
                "taken \(s.taken)", "skipped \(encoded.skipped)", "encode p99 \(ms(encoded.encode, encoded.encode.p99))",
            ]
            // With layers, what they send together (each layer's own is in the report and /metrics).
            let layers = encoded.layers.count > 1 ? " (\(encoded.layers.count) layers)" : ""
            fields.append((kbps.map { "\(fixed($0, 0)) kbit/s" } ?? "– kbit/s") + layers)
        } else {
            fields.append("taken \(s.taken)")
        }
        fields.append("invalid \(s.invalid)")
        if s.checksumsVerified > 0 { fields.append("checksums verified \(s.checksumsVerified)") }
        fields.append("capture→taken \(percentiles(s.captureToTaken))")
        fields.append("hand-off p99 \(ms(s.handoff, s.handoff.p99))")
        var line = ""
        for field in fields {
            let next = line.isEmpty ? field : line + "  " + field
            guard next.count <= width else { break }
            line = next
        }
        return line.isEmpty ? String(fields[0].prefix(max(0, width))) : line
    }
}
