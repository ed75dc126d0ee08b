/// Something that produces upright pictures one at a time: a synthetic
/// screen, a video file, a desktop capture.
import FrameRelayFrames
import FrameRelaySystem

public protocol FrameSource: AnyObject {
    /// The upright picture size.
    var width: Int { get }
    var height: Int { get }
    /// The picture for frame `number`, in a buffer owned by the source and
    /// valid until the next call (I420 or BGRA), with what changed since the
    /// picture before, when the source knows (the producer passes it on, so
    /// the host compares only there, or not at all); nil at the end of the source.
    func nextFrame(number: UInt64) throws -> SourceFrame?

    /// Waits for the next frame's time: from `start` (CLOCK_MONOTONIC ns) a
    /// source that is told when a picture comes (a screen cast) returns as
    /// soon as one is there, as a broadcast extension gets its sample when
    /// the frame is made; at `deadline` at the latest. Others sleep until `deadline`.
    func waitForPicture(from start: UInt64, until deadline: UInt64)
}

extension FrameSource {
    public func waitForPicture(from start: UInt64, until deadline: UInt64) { MonotonicClock.sleep(until: deadline) }
}

/// A source's picture and what changed in it since the one before.
public struct SourceFrame {
    public let picture: PixelBuffer
    public let damage: Damage
    /// When the picture was made, where the source knows (a compositor's
    /// time for it, CLOCK_MONOTONIC ns); nil: when the producer took it.
    public let capturedAt: UInt64?

    public init(_ picture: PixelBuffer, damage: Damage = .unknown, capturedAt: UInt64? = nil) {
        self.picture = picture
        self.damage = damage
        self.capturedAt = capturedAt
    }
}
