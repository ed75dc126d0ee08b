/// Where a VP8 frame sits among temporal layers, as its RTP payload
/// descriptor says (RFC 7741 §4.2: TID, Y and N; TL0PICIDX is the
/// packetizer's count of base-layer frames). A viewer, or Janus on its
/// behalf, that takes only the base layer (TID 0) drops the frames above it.
public struct VP8TemporalLayer: Equatable, Sendable {
    /// TID: 0 is the base layer.
    public var id: UInt8
    /// Y: the frame references only base-layer frames, so a viewer may start taking this layer here.
    public var sync: Bool
    /// N: no frame references this one, so dropping it costs nothing.
    public var discardable: Bool

    public init(id: UInt8, sync: Bool, discardable: Bool) {
        precondition(id < 4, "TID is 2 bits")
        self.id = id
        self.sync = sync
        self.discardable = discardable
    }
}
