/// What one ``RingProducer/publish(_:frameNumber:captureTime:orientation:checksum:damage:)`` did.
public struct Publication: Sendable, Equatable {
    /// Whether the frame replaced one the host never took (a drop).
    public var replacedUntaken = false
    /// Why the ring was made anew on the way (found corrupted, unlinked or
    /// shrunk by another process), if it was.
    public var ringRecreated: String?

    public init(replacedUntaken: Bool = false, ringRecreated: String? = nil) {
        self.replacedUntaken = replacedUntaken
        self.ringRecreated = ringRecreated
    }
}
