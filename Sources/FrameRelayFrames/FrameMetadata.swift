/// What the host knows about one frame: its number, when it was captured
/// and published, its size, pixel format and orientation, its payload's
/// size and checksum, and where its planes are (``PlaneLayout``). In the
/// ring it travels as a ``SlotHeader`` in front of its payload.
///
/// Times are CLOCK_MONOTONIC nanoseconds. `checksum` is ``FrameChecksum`` of
/// the payload, or 0 when the producer does not compute one. `picture`
/// names the picture the frame carries: frames with the same nonzero
/// `picture` carry the same bytes at the same size, format and orientation,
/// so the host need not compare them (0: the producer does not say, as
/// iOS says nothing to a broadcast extension). `changedSince` names an
/// earlier picture of the same size, format and orientation that this one
/// equals outside the `changed` region (0: the producer does not say), so
/// a host holding that picture converts and compares only the region.
/// `pictureFrame` is the number of the frame that last changed what the
/// screen shows, as its capturer knew it (nil: not said): the frame whose
/// picture this one carries, and the number a synthetic screen stamps on it.
public struct FrameMetadata: Sendable, Equatable {
    /// The largest width or height VP8 can code.
    public static let maxDimension = 16383

    public var frameNumber: UInt64
    public var captureTime: UInt64
    public var publishTime: UInt64
    public var checksum: UInt64
    public var picture: UInt64
    public var changedSince: UInt64
    public var changed: PixelRegion
    public var pictureFrame: UInt64?
    public var width: Int
    public var height: Int
    public var format: PixelFormat
    public var orientation: Orientation
    public var payloadSize: Int
    public var planes: PlaneLayout

    public init(
        frameNumber: UInt64, captureTime: UInt64, publishTime: UInt64 = 0, checksum: UInt64 = 0, picture: UInt64 = 0,
        changedSince: UInt64 = 0, changed: PixelRegion = PixelRegion(), pictureFrame: UInt64? = nil,
        width: Int, height: Int, format: PixelFormat, orientation: Orientation,
        payloadSize: Int, planes: PlaneLayout
    ) {
        self.frameNumber = frameNumber
        self.captureTime = captureTime
        self.publishTime = publishTime
        self.checksum = checksum
        self.picture = picture
        self.changedSince = changedSince
        self.changed = changed
        self.pictureFrame = pictureFrame
        self.width = width
        self.height = height
        self.format = format
        self.orientation = orientation
        self.payloadSize = payloadSize
        self.planes = planes
    }
}
