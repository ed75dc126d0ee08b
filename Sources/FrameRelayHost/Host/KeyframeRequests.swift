import Synchronization

/// Why a share's next frame should be a keyframe, gathered from every thread
/// that may ask (the share's RTCP, viewer connections) into the one input
/// the share's loop reads.
public final class KeyframeRequests: Sendable {
    public struct Reasons: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// PLI or FIR from an RTP receiver.
        public static let receiver = Reasons(rawValue: 1)
        /// A viewer joined or fell behind.
        public static let viewer = Reasons(rawValue: 2)
    }

    /// Which simulcast streams a keyframe is asked on (bit N: stream N).
    public struct Streams: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let all = Streams(rawValue: 0xFF)
        /// The whole picture's, whichever stream it is (the host's own viewers watch it).
        public static let top = Streams(rawValue: 0x80)
        public static func stream(_ index: Int) -> Streams { Streams(rawValue: 1 << UInt8(index)) }
    }

    private let pending = Atomic<UInt8>(0)
    private let pendingStreams = Atomic<UInt8>(0)
    /// When the last request was let through (the loop's thread only).
    private let lastGranted = Atomic<UInt64>(0)
    /// At most one asked-for keyframe in this time; a later ask waits, it is not lost.
    public static let interval: UInt64 = 200_000_000

    public init() {}

    /// Asks for a keyframe on `streams` (any thread).
    public func ask(_ reason: Reasons, on streams: Streams = .all) {
        pendingStreams.bitwiseOr(streams.rawValue, ordering: .relaxed)
        pending.bitwiseOr(reason.rawValue, ordering: .relaxed)
    }

    /// The reasons pending and the streams asked on, if a keyframe may be
    /// made at `now`; clears them (the share's loop only).
    public func take(now: UInt64) -> (reasons: Reasons, streams: Streams)? {
        guard pending.load(ordering: .relaxed) != 0, now &- lastGranted.load(ordering: .relaxed) >= Self.interval else { return nil }
        lastGranted.store(now, ordering: .relaxed)
        let reasons = Reasons(rawValue: pending.exchange(0, ordering: .relaxed))
        return (reasons, Streams(rawValue: pendingStreams.exchange(0, ordering: .relaxed)))
    }
}
