/// What one ``VP8Encoder/encode(_:captureTime:keyframe:activeMap:segments:refineDelta:output:)`` did.
public struct EncodeOutcome: Sendable, Equatable {
    /// Whether libvpx produced a frame (false: its rate control dropped this one).
    public var produced = false
    /// Whether the frame is a keyframe.
    public var keyframe = false
    /// The quantizer (0–63) libvpx chose for the frame.
    public var quantizer = 0
    /// The frame's size in bytes.
    public var bytes = 0
    /// The frame's 90 kHz time stamp.
    public var pts: Int64 = 0
    /// Whether an active map chose the macroblocks coded (the rest kept from the reference), rather than all of them.
    public var activeMap = false
    /// The temporal layer it was coded in (0 with one layer).
    public var temporalLayer = 0

    public init(produced: Bool = false, keyframe: Bool = false, quantizer: Int = 0, bytes: Int = 0, pts: Int64 = 0, activeMap: Bool = false) {
        self.produced = produced
        self.keyframe = keyframe
        self.quantizer = quantizer
        self.bytes = bytes
        self.pts = pts
        self.activeMap = activeMap
    }
}
