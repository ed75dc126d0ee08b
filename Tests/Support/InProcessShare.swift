import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayHost

/// One share in this process: a ring of a new App Group with room for
/// `width`×`height` I420 frames, its host end and a pipeline, for driving
/// the host's path frame by frame. Gone with the value.
public final class InProcessShare {
    public let producer: RingProducer
    public let host: RingHost
    public let pipeline: SharePipeline

    public init(_ tag: String, width: Int, height: Int, options: SharePipeline.Options = .init(), sinks: [any FrameSink] = []) throws {
        let group = uniqueGroup(tag)
        producer = try RingProducer(appGroup: group, slotCapacity: try PixelBuffer.capacity(width: width, height: height, format: .i420))
        host = RingHost(appGroup: group)
        pipeline = try SharePipeline(options: options, sinks: sinks)
    }

    deinit {
        producer.finish()
        host.detach()
    }

    /// Publishes `picture` as frame `n` (captured at 30 frames/s, or at `captureTime`), takes it
    /// and runs it through the pipeline; the frame with its stage times.
    public func relay(_ picture: PixelBuffer, _ n: Int, damage: Damage = .unknown, captureTime: UInt64? = nil) throws -> HostFrame {
        try producer.publish(picture, frameNumber: UInt64(n), captureTime: captureTime ?? UInt64(n + 1) * 33_333_333, damage: damage)
        guard case .frame(let view) = try nextFrameEvent(host) else { throw SystemError("take", "frame \(n)", code: .ioError) }
        var frame = HostFrame(view, taken: MonotonicClock.now())
        try pipeline.process(&frame)
        return frame
    }
}
