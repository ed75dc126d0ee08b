import FoundationEssentials
import FrameRelaySystem

/// What `frame-relay receive` measured: the receiver's counters and, given
/// the capture time of each frame number, latency and loss at the viewer's side.
public struct ReceiveReport: Codable, Sendable {
    public var stats: RTPReceiver.Stats
    /// Capture → decoded by the receiver, per frame matched by its stamp (µs).
    public var glassToGlass: LatencySummary?
    /// Frames decoded whose capture time was known.
    public var matched = 0
    /// Frames captured within the received span that never decoded.
    public var missing = 0
    /// Seconds from the receiver's start to its first decoded picture: what a
    /// viewer joining a running stream waits (nil: nothing decoded).
    public var firstPictureAfter: Double?

    public init(stats: RTPReceiver.Stats) { self.stats = stats }

    /// Reads capture times from JSON lines with `frame` and `captured` fields
    /// (a host's `--trace`, or a feeder's log); a line that sent a frame's
    /// picture again (`heldBack`, ``FrameTiming/heldBack``) is not its capture.
    public static func captureTimes(jsonLines path: String) throws(CaptureTimesError) -> [UInt64: UInt64] {
        struct Line: Decodable { var frame: UInt64; var captured: UInt64; var heldBack: Bool? }
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path) }
        let text = String(decoding: data, as: UTF8.self)
        var times: [UInt64: UInt64] = [:]
        let decoder = JSONDecoder()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where !line.isEmpty {
            do {
                let entry = try decoder.decode(Line.self, from: Data(line.utf8))
                if entry.heldBack != true { times[entry.frame] = entry.captured }
            } catch {
                // A last line without its newline may be one a running host is still writing.
                if index == lines.count - 1 { break }
                throw .malformedLine(path, line: index + 1)
            }
        }
        guard !times.isEmpty else { throw .empty(path) }
        return times
    }

    /// Fills in latency and loss from decode arrivals (frame number, CLOCK_MONOTONIC ns).
    public mutating func match(arrivals: [(frame: UInt64, time: UInt64)], captures: [UInt64: UInt64]) {
        var histogram = LatencyHistogram()
        var decoded = Set<UInt64>()
        for arrival in arrivals {
            guard let captured = captures[arrival.frame], arrival.time >= captured else { continue }
            histogram.record(arrival.time - captured)
            decoded.insert(arrival.frame)
        }
        matched = decoded.count
        if let first = decoded.min(), let last = decoded.max() {
            missing = captures.keys.filter { $0 >= first && $0 <= last && !decoded.contains($0) }.count
        }
        glassToGlass = histogram.summary
    }
}
