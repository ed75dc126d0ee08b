/// What one ``RingProducer/publish(_:frameNumber:captureTime:orientation:checksum:damage:)`` did.
public struct Publication: Sendable, Equatable {
    /// Whether the frame replaced one the host never took (a drop).
    public var replacedUntaken = false
    /// Why the ring was made anew on the way (found corrupted, unlinked or
    /// shrunk by another process), if it was.
    public var ringRecreated: String?
    /// False when a frame drawn in place could not be drawn: nothing was published.
    public var published = true

    public init(replacedUntaken: Bool = false, ringRecreated: String? = nil) {
        self.replacedUntaken = replacedUntaken
        self.ringRecreated = ringRecreated
    }
}

/// One slot of one ring a producer made: a frame drawn there in place is
/// there again the next time the same slot comes round (until the ring is made anew).
public struct RingSlot: Hashable, Sendable {
    /// Which of the producer's rings (each one made anew counts up).
    public let ring: Int
    /// The slot's index in that ring.
    public let index: Int

    public init(ring: Int, index: Int) {
        self.ring = ring
        self.index = index
    }
}
