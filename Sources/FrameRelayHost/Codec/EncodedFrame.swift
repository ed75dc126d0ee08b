/// One encoded VP8 frame, borrowed from the encoder until its next call.
public struct EncodedFrame {
    public let bytes: UnsafeRawBufferPointer
    public let isKeyframe: Bool
    /// Presentation time in the encoder's 90 kHz time base.
    public let pts: Int64
    /// The coded picture's size.
    public let width: Int
    public let height: Int
}
