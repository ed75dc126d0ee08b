import FrameRelayJanus

/// Which of Janus's SSRCs a viewer decrypts: those its offer names (the
/// stream and its retransmissions), or, when the offer names none, the
/// first few heard. libsrtp keeps state for every SSRC it authenticates,
/// so a peer that sends each packet under a new SSRC grew a viewer's memory
/// and CPU (31 → 59 MB, twice the CPU, in 60 s); the filter runs before
/// decrypting.
struct SSRCFilter {
    /// The most SSRCs a viewer takes.
    static let limit = JanusOffer.ssrcLimit
    private var allowed: [UInt32]
    private let learns: Bool

    init(offered: [UInt32]) {
        allowed = Array(offered.prefix(Self.limit))
        learns = offered.isEmpty
    }

    /// Whether packets of `ssrc` go on to be decrypted.
    mutating func accepts(_ ssrc: UInt32) -> Bool {
        if allowed.contains(ssrc) { return true }
        guard learns, allowed.count < Self.limit else { return false }
        allowed.append(ssrc)
        return true
    }
}
