/// One frame on its way through the host: the borrowed picture and the
/// time it reached each stage, carried together from take to the outputs.
///
/// Valid only during the loop iteration that took it (the view points into
/// the host's ring slot).
import FrameRelayFrames
import FrameRelayRing

public struct HostFrame {
    public let view: FrameView
    public var timing: FrameTiming

    /// The frame as taken at `taken` (CLOCK_MONOTONIC ns).
    public init(_ view: FrameView, taken: UInt64) {
        self.view = view
        timing = FrameTiming()
        timing.frame = view.metadata.frameNumber
        timing.shows = view.metadata.pictureFrame
        timing.captured = view.metadata.captureTime
        timing.published = view.metadata.publishTime
        timing.taken = taken
    }

    public var metadata: FrameMetadata { view.metadata }
}
