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

    private let pending = Atomic<UInt8>(0)
    /// When the last request was let through (the loop's thread only).
    private let lastGranted = Atomic<UInt64>(0)
    /// At most one asked-for keyframe in this time; a later ask waits, it is not lost.
    public static let interval: UInt64 = 200_000_000

    public init() {}

    /// Asks for a keyframe (any thread).
    public func ask(_ reason: Reasons) {
        pending.bitwiseOr(reason.rawValue, ordering: .relaxed)
    }

    /// The reasons pending, if a keyframe may be made at `now`; clears them
    /// (the share's loop only).
    public func take(now: UInt64) -> Reasons? {
        guard pending.load(ordering: .relaxed) != 0, now &- lastGranted.load(ordering: .relaxed) >= Self.interval else { return nil }
        lastGranted.store(now, ordering: .relaxed)
        return Reasons(rawValue: pending.exchange(0, ordering: .relaxed))
    }
}
