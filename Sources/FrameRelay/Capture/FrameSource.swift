/// Something that produces upright pictures one at a time: a synthetic
/// screen, a video file, a desktop capture.
public protocol FrameSource: AnyObject {
    /// The upright picture size.
    var width: Int { get }
    var height: Int { get }
    /// The picture for frame `number`, in a buffer owned by the source and
    /// valid until the next call (I420 or BGRA); nil at the end of the source.
    func nextFrame(number: UInt64) throws -> PixelBuffer?
}
