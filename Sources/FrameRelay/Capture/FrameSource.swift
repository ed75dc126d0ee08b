/// Something that produces upright pictures one at a time: a synthetic
/// screen, a video file, a desktop capture.
public protocol FrameSource: AnyObject {
    /// The upright picture size.
    var width: Int { get }
    var height: Int { get }
    /// The picture for frame `number`, in a buffer owned by the source and
    /// valid until the next call (I420 or BGRA); nil at the end of the source.
    func nextFrame(number: UInt64) throws -> PixelBuffer?
    /// Whether the last picture returned is byte for byte the one returned
    /// before it: damage the source knows for free (the producer passes it
    /// on, so the host need not compare). False when the source cannot tell.
    var repeatsPrevious: Bool { get }
    /// Where the last picture returned differs from the one before, when
    /// the source knows (a redrawn area, the display's damage); nil when it
    /// cannot tell.
    var changedRegion: PixelRegion? { get }
}

extension FrameSource {
    public var repeatsPrevious: Bool { false }
    public var changedRegion: PixelRegion? { nil }
}
