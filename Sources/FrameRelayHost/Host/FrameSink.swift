/// Where a share's encoded frames go. ``SharePipeline`` hands each frame to
/// its sinks in order: the recording (``ShareRecording``), then those it
/// was given: the RTP stream (``RTPSession``, which carries Janus's
/// mountpoint too) and the live viewers (``FrameBroadcast``). A new output
/// is one more conformance in its own folder, given to the pipeline's
/// initializer; what a sink does between frames, and what it says of itself,
/// it says through the requirements below (each has a default that does
/// nothing), so the pipeline knows none of them by type.
public protocol FrameSink: AnyObject {
    /// Takes one encoded frame captured at `captureTime` (valid only during
    /// the call), writing on `timing` what it times.
    func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming)

    /// The share is over: write what is left and close.
    func finish()

    /// Whether it has work between frames (feedback to read, viewers to
    /// serve): the share's loop then wakes often.
    var isLive: Bool { get }

    /// Whether it wants a frame now and then on a still screen (a receiver
    /// that would take silence for a lost stream).
    var wantsIdleRepeats: Bool { get }

    /// Fills in what it times of a frame after ``deliver`` returned (when
    /// the RTP pacer let its last packet out); false while that is to come.
    func complete(_ timing: inout FrameTiming) -> Bool

    /// Its work between frames at `now`; the simulcast streams its receivers asked a keyframe on.
    func poll(now: UInt64) -> KeyframeRequests.Streams

    /// The top layer's bitrate its receivers carry (kbit/s), when it adapts to them.
    var targetBitrateKbps: Int? { get }

    /// Whether one of its receivers cannot ask for a keyframe, so that keyframes come periodically.
    func needsPeriodicKeyframes(now: UInt64) -> Bool

    /// Writes its figures into the share's statistics.
    func report(into stats: inout ShareStats)
}

extension FrameSink {
    public func finish() {}
    public var isLive: Bool { false }
    public var wantsIdleRepeats: Bool { false }
    public func complete(_ timing: inout FrameTiming) -> Bool { true }
    public func poll(now: UInt64) -> KeyframeRequests.Streams { [] }
    public func needsPeriodicKeyframes(now: UInt64) -> Bool { false }
    public var targetBitrateKbps: Int? { nil }
    public func report(into stats: inout ShareStats) {}
}
