import FoundationEssentials

/// The frames a host sent, from its `--trace` (JSON lines with `share`,
/// `frame`, `shows`, `captured` and, for frames sent over RTP, `picture`,
/// and with simulcast `streams`, each one's PictureID, width and whether
/// it was a keyframe): what a subscriber behind Janus needs to turn a
/// PictureID back into the frame and its capture time. Janus 1.1 rewrites
/// each viewer's sequence numbers and timestamps (from where it joined) and
/// sends Sender Reports of its own; it passes the VP8 payload of a
/// single-stream mountpoint untouched, PictureID included, and on a
/// simulcast one shifts each viewer's PictureIDs at every substream switch
/// (the first keyframe included) so that they run on from the last it
/// relayed (utils.c, janus_vp8_simulcast_descriptor_update): a viewer then
/// maps them back from each switch's keyframe (``anchors(of:keyframes:)``).
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

    /// Per share, per stream (simulcast; -1: the one stream of a share without), per PictureID:
    /// every frame sent with it, oldest first (a 15-bit PictureID wraps after 32,768 frames).
    private var sent: [String: [Int: [UInt16: [Sent]]]] = [:]
    /// Per share, per stream: its keyframes (PictureID, width, capture time), oldest first.
    private var keyframes: [String: [Int: [(picture: UInt16, width: Int, captured: UInt64)]]] = [:]

    public init() {}

    /// Reads the traces at `paths`; throws naming a file that cannot be read or a malformed line.
    public init(paths: [String]) throws(HostTraceError) {
        struct Line: Decodable { var share: String; var frame: UInt64; var shows: UInt64?; var captured: UInt64; var picture: UInt16?; var streams: [[Int]]? }
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
                let frame = Sent(frame: entry.frame, shows: entry.shows, captured: entry.captured)
                if let streams = entry.streams {
                    for stream in streams where stream.count == 4 && (0...2).contains(stream[0]) && (0...0x7FFF).contains(stream[1]) {
                        sent[entry.share, default: [:]][stream[0], default: [:]][UInt16(stream[1]), default: []].append(frame)
                        if stream[3] != 0 { keyframes[entry.share, default: [:]][stream[0], default: []].append((UInt16(stream[1]), stream[2], entry.captured)) }
                    }
                } else if let picture = entry.picture {
                    sent[entry.share, default: [:]][-1, default: [:]][picture, default: []].append(frame)
                }
            }
        }
        for share in sent.keys {
            for stream in sent[share]!.keys {
                for picture in sent[share]![stream]!.keys { sent[share]![stream]![picture]!.sort { $0.captured < $1.captured } }
            }
        }
        for share in keyframes.keys {
            for stream in keyframes[share]!.keys { keyframes[share]![stream]!.sort { $0.captured < $1.captured } }
        }
    }

    /// Where a viewer's PictureIDs come from from a keyframe on: the stream
    /// (-1: the share's only one) and what to add to a PictureID the viewer
    /// saw to get the one the host sent.
    public struct Anchor: Sendable, Equatable {
        public var from: UInt64
        public var stream: Int
        public var offset: UInt16
    }

    /// The anchors of a viewer of `share` that took `keyframes` (PictureID
    /// as it saw it, width, when): on a simulcast share, each keyframe
    /// (Janus shifts PictureIDs at a substream switch, which comes at a
    /// keyframe; one may go there and back on keyframes the viewer never
    /// got whole, so a keyframe of the width before may follow a shift) is the keyframe of the stream of
    /// its width that the host sent before it came, no later than the least
    /// delay of the `frames` before it allows: of those, the one that makes
    /// the most of the keyframes after it on the same substream keyframes
    /// the host sent (Janus keeps PictureIDs' differences within a
    /// substream, and keyframes come when PLIs ask, at no fixed pace), the
    /// latest on a tie (a keyframe a later PLI made while this one was
    /// still on a slow link is so told apart). PictureIDs from it on are
    /// that stream's, shifted as Janus shifted them. On a single-stream
    /// share, one anchor with no shift.
    public func anchors(of share: String, keyframes seen: [(picture: UInt16, width: Int, at: UInt64)],
                        frames: [(picture: UInt16, at: UInt64)] = []) -> [Anchor] {
        guard let byStream = keyframes[share] else { return [Anchor(from: 0, stream: -1, offset: 0)] }
        var anchors: [Anchor] = []
        var leastDelay: UInt64?
        var next = 0
        for (index, key) in seen.enumerated() {
            let later = seen[(index + 1)...].prefix { $0.width == key.width }
            // The frames since the last anchor, mapped by it: the link's least delay so far.
            while next < frames.count, frames[next].at < key.at {
                if let found = frame(of: share, picture: frames[next].picture, at: frames[next].at, anchors: anchors) {
                    let delay = frames[next].at &- found.sent.captured
                    leastDelay = min(leastDelay ?? delay, delay)
                }
                next += 1
            }
            let latest = key.at &- min(key.at, leastDelay ?? 0)
            var best: (score: Int, captured: UInt64, anchor: Anchor)?
            for (stream, keys) in byStream {
                let pictures = Set(keys.filter { $0.width == key.width }.map(\.picture))
                // The last few of its keyframes the link could have brought by then.
                for sent in keys.filter({ $0.width == key.width && $0.captured <= latest }).suffix(8) {
                    let offset = (sent.picture &- key.picture) & 0x7FFF
                    let score = later.filter { pictures.contains(($0.picture &+ offset) & 0x7FFF) }.count
                    if best == nil || score > best!.score || (score == best!.score && sent.captured > best!.captured) {
                        best = (score, sent.captured, Anchor(from: key.at, stream: stream, offset: offset))
                    }
                }
            }
            if let best { anchors.append(best.anchor) }
        }
        return anchors
    }

    /// The frame behind PictureID `picture` that a viewer with `anchors`
    /// saw at `time`, and how many times smaller than the whole picture its
    /// stream's is (1, 2, 4: the stamp's scale).
    public func frame(of share: String, picture: UInt16, at time: UInt64, anchors: [Anchor]) -> (sent: Sent, scale: Int)? {
        guard let anchor = anchors.last(where: { $0.from <= time }),
              let frame = sent[share]?[anchor.stream]?[(picture &+ anchor.offset) & 0x7FFF]?.last(where: { $0.captured <= time }) else { return nil }
        let top = sent[share]?.keys.max() ?? -1
        return (frame, 1 << max(0, top - anchor.stream))
    }

    /// Whether the trace has anything of `share`.
    public func has(_ share: String) -> Bool { sent[share] != nil }
}

/// A host trace that cannot be used.
public struct HostTraceError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "--captures \(path): \(reason)" }
}
