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
}

extension FrameSource {
    public var repeatsPrevious: Bool { false }
}
