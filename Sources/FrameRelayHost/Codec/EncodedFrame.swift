import FrameRelayRTP

/// One encoded VP8 frame, borrowed from the encoder until its next call.
public struct EncodedFrame {
    public let bytes: UnsafeRawBufferPointer
    public let isKeyframe: Bool
    /// Presentation time in the encoder's 90 kHz time base.
    public let pts: Int64
    /// The coded picture's size.
    public let width: Int
    public let height: Int
    /// Its temporal layer, when the stream has two.
    public var temporalLayer: VP8TemporalLayer? = nil
    /// Its simulcast layer: 0 is the smallest; ``isTopLayer`` the whole picture.
    public var layer = 0
    public var isTopLayer = true
}
