/// Where a share's encoded frames go. ``SharePipeline`` hands each frame to
/// its sinks in order: the recording (``ShareRecording``), the RTP stream
/// (``RTPSession``, which carries Janus's mountpoint too) and the live
/// viewers (``FrameBroadcast``). A new output is one more conformance in
/// its own folder, given to the pipeline's initializer.
public protocol FrameSink: AnyObject {
    /// Takes one encoded frame of a `width`×`height` picture captured at
    /// `captureTime` (valid only during the call), writing on `timing` what
    /// it times.
    func deliver(_ frame: EncodedFrame, width: Int, height: Int, captureTime: UInt64, timing: inout FrameTiming)

    /// The share is over: write what is left and close.
    func finish()
}

extension FrameSink {
    public func finish() {}
}
