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
        /// Sent on its own with a change held back from a base temporal layer (no new picture): out of the latency figures.
        public var heldBack = false

        /// The frame number a decoded picture's stamp must read: the frame that
        /// last changed it, which is the frame itself on a screen that changes every frame.
        public var stamp: UInt64 { (shows ?? frame) & 0xFF_FFFF }
    }

    /// Per share, per stream (simulcast; -1: the one stream of a share without), per PictureID:
    /// every frame sent with it, oldest first (a 15-bit PictureID wraps after 32,768 frames).
    private var sent: [String: [Int: [UInt16: [Sent]]]] = [:]
    /// Per share, per stream: its keyframes (PictureID, width, size, capture time), oldest first.
    private var keyframes: [String: [Int: [(picture: UInt16, width: Int, bytes: Int, captured: UInt64)]]] = [:]

    /// A keyframe a viewer decoded: its PictureID as the viewer saw it, its
    /// width, its VP8 data's size (Janus passes the data untouched) and when it came whole.
    public struct SeenKeyframe: Sendable, Equatable {
        public var picture: UInt16
        public var width: Int
        public var bytes: Int
        public var at: UInt64

        public init(picture: UInt16, width: Int, bytes: Int, at: UInt64) {
            self.picture = picture
            self.width = width
            self.bytes = bytes
            self.at = at
        }
    }

    public init() {}

    /// Reads the traces at `paths`; throws naming a file that cannot be read or a malformed line.
    public init(paths: [String]) throws(HostTraceError) {
        struct Line: Decodable { var share: String; var frame: UInt64; var shows: UInt64?; var captured: UInt64; var picture: UInt16?; var streams: [[Int]]?; var heldBack: Bool? }
        let decoder = JSONDecoder()
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else { throw HostTraceError(path: path, reason: "cannot be read") }
            let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            var records = 0
            for (index, line) in lines.enumerated() where !line.isEmpty {
                guard let entry = try? decoder.decode(Line.self, from: Data(line)) else {
                    // A last line without its newline may be one a running host is still writing, after records it wrote.
                    if index == lines.count - 1, records > 0 { break }
                    throw HostTraceError(path: path, reason: "line \(index + 1) is not a trace record")
                }
                records += 1
                let frame = Sent(frame: entry.frame, shows: entry.shows, captured: entry.captured, heldBack: entry.heldBack ?? false)
                if let streams = entry.streams {
                    // [stream, PictureID, width, keyframe, bytes]
                    for stream in streams where stream.count == 5 && (0...2).contains(stream[0]) && (0...0x7FFF).contains(stream[1]) {
                        sent[entry.share, default: [:]][stream[0], default: [:]][UInt16(stream[1]), default: []].append(frame)
                        if stream[3] != 0 {
                            keyframes[entry.share, default: [:]][stream[0], default: []].append((UInt16(stream[1]), stream[2], stream[4], entry.captured))
                        }
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

    /// The anchors of a viewer of `share` that took `keyframes`: on a
    /// simulcast share, each keyframe (Janus shifts PictureIDs at a
    /// substream switch, which comes at a keyframe; one may go there and
    /// back on keyframes the viewer never got whole, so a keyframe of the
    /// width before may follow a shift) is a keyframe the host sent of its
    /// width and its size, byte for byte, captured before it came. By time
    /// alone a keyframe that crossed a slow link while the host made another
    /// would be taken for the later one, and one of keyframes at a steady
    /// pace for a neighbour, and every figure after it with it. Should
    /// several match (a still screen's keyframes may be alike), the one that
    /// makes the most of the keyframes after it on the same substream
    /// keyframes the host sent (Janus keeps PictureIDs' differences within a
    /// substream), the latest on a tie. PictureIDs from it on are that
    /// stream's, shifted as Janus shifted them; after a keyframe that matches
    /// none, no frame is mapped until the next. On a single-stream share,
    /// one anchor with no shift.
    public func anchors(of share: String, keyframes seen: [SeenKeyframe]) -> [Anchor] {
        guard let byStream = keyframes[share] else { return [Anchor(from: 0, stream: -1, offset: 0)] }
        var anchors: [Anchor] = []
        for (index, key) in seen.enumerated() {
            let later = seen[(index + 1)...].prefix { $0.width == key.width }
            var best: (score: Int, captured: UInt64, anchor: Anchor)?
            for (stream, keys) in byStream {
                let pictures = Set(keys.filter { $0.width == key.width }.map(\.picture))
                for sent in keys where sent.width == key.width && sent.bytes == key.bytes && sent.captured <= key.at {
                    let offset = (sent.picture &- key.picture) & 0x7FFF
                    let score = later.filter { pictures.contains(($0.picture &+ offset) & 0x7FFF) }.count
                    if best == nil || score > best!.score || (score == best!.score && sent.captured > best!.captured) {
                        best = (score, sent.captured, Anchor(from: key.at, stream: stream, offset: offset))
                    }
                }
            }
            anchors.append(best?.anchor ?? Anchor(from: key.at, stream: Self.unknownStream, offset: 0))
        }
        return anchors
    }

    /// The stream of an anchor at a keyframe the host's trace has none like: nothing maps through it.
    static let unknownStream = -2

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
