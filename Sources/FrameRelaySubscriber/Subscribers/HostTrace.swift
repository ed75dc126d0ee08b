import FoundationEssentials

/// The frames a host sent, from its `--trace` (JSON lines with `share`,
/// `frame`, `shows`, `captured` and, for frames sent over RTP, `picture`): what a
/// subscriber behind Janus needs to turn a PictureID back into the frame
/// and its capture time. Janus 1.1 rewrites each viewer's sequence numbers
/// and timestamps (from where it joined) and sends Sender Reports of its
/// own, but passes the VP8 payload, PictureID included, untouched.
public struct HostTrace: Sendable {
    public struct Sent: Sendable, Equatable {
        public var frame: UInt64
        /// The frame that last changed its picture (nil: the producer did not say).
        public var shows: UInt64?
        public var captured: UInt64

        /// The frame number a decoded picture's stamp must read: the frame that
        /// last changed it, which is the frame itself on a screen that changes every frame.
        public var stamp: UInt64 { (shows ?? frame) & 0xFF_FFFF }
    }

    /// Per share, per PictureID: every frame sent with it, oldest first (a 15-bit PictureID wraps after 32,768 frames).
    private var sent: [String: [UInt16: [Sent]]] = [:]

    public init() {}

    /// Reads the traces at `paths`; throws naming a file that cannot be read or a malformed line.
    public init(paths: [String]) throws(HostTraceError) {
        struct Line: Decodable { var share: String; var frame: UInt64; var shows: UInt64?; var captured: UInt64; var picture: UInt16? }
        let decoder = JSONDecoder()
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else { throw HostTraceError(path: path, reason: "cannot be read") }
            let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where !line.isEmpty {
                guard let entry = try? decoder.decode(Line.self, from: Data(line)) else {
                    // A last line without its newline may be one a running host is still writing.
                    if index == lines.count - 1 { break }
                    throw HostTraceError(path: path, reason: "line \(index + 1) is not a trace record")
                }
                guard let picture = entry.picture else { continue }
                sent[entry.share, default: [:]][picture, default: []].append(Sent(frame: entry.frame, shows: entry.shows, captured: entry.captured))
            }
        }
        for share in sent.keys {
            for picture in sent[share]!.keys { sent[share]![picture]!.sort { $0.captured < $1.captured } }
        }
    }

    /// Whether the trace has anything of `share`.
    public func has(_ share: String) -> Bool { sent[share] != nil }

    /// The frame `share` sent with `picture` most recently before `time` (CLOCK_MONOTONIC ns).
    public func frame(of share: String, picture: UInt16, before time: UInt64) -> Sent? {
        sent[share]?[picture]?.last { $0.captured <= time }
    }
}

/// A host trace that cannot be used.
public struct HostTraceError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "--captures \(path): \(reason)" }
}
