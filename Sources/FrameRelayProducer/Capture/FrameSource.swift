/// Something that produces upright pictures one at a time: a synthetic
/// screen, a video file, a desktop capture.
import FrameRelayFrames
import FrameRelaySystem
import FrameRelayRing

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

/// A source that can draw its pictures straight into the ring's free slot
/// (a screen cast: the compositor's picture converted once, into the
/// memory the host reads), keeping no picture of its own.
public protocol DrawingFrameSource: FrameSource {
    /// Whether it was made to draw in place (else ``FrameSource/nextFrame(number:)`` serves).
    var drawsInPlace: Bool { get }
    /// The next frame, to be drawn where the producer says; nil at the end of the source.
    func nextDrawing(number: UInt64) throws -> SourceDrawing?
}

/// A frame a ``DrawingFrameSource`` draws into a ring slot.
public struct SourceDrawing {
    public let width: Int
    public let height: Int
    public let format: PixelFormat
    /// What changed since the frame before, as ``SourceFrame/damage``.
    public let damage: Damage
    public let capturedAt: UInt64?
    /// Draws the picture into `target` (the slot's payload, of this geometry):
    /// only what changed since the picture the slot holds. False when it could not.
    public let draw: (_ target: PixelBuffer, _ slot: RingSlot) -> Bool

    public init(width: Int, height: Int, format: PixelFormat, damage: Damage, capturedAt: UInt64?,
                draw: @escaping (_ target: PixelBuffer, _ slot: RingSlot) -> Bool) {
        self.width = width
        self.height = height
        self.format = format
        self.damage = damage
        self.capturedAt = capturedAt
        self.draw = draw
    }
}
