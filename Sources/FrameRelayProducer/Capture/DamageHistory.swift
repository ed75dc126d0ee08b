import FrameRelayFrames

/// What changed in each of a source's last few pictures, so that a buffer
/// holding an older picture is brought up to date by drawing only that: as
/// a compositor redraws a buffer it reuses by the buffer's age. A screen
/// cast draws into the ring's three slots in turn, each holding the
/// picture last drawn there.
struct DamageHistory {
    /// The newest picture's number (0: none yet).
    private(set) var newest: UInt64 = 0
    private var entries: [(picture: UInt64, region: PixelRegion?)] = []
    private let length: Int

    init(length: Int = 8) {
        self.length = length
    }

    /// A new picture that changed `region` from the one before (nil: all of it, or unknown).
    mutating func add(_ region: PixelRegion?) {
        newest += 1
        entries.append((newest, region))
        if entries.count > length { entries.removeFirst() }
    }

    /// What changed since picture `holding`: empty when it is the newest,
    /// nil (all of it) when it is unknown, older than the pictures kept, or
    /// followed by a picture whose change is unknown.
    func changed(since holding: UInt64?) -> PixelRegion? {
        guard let holding, holding <= newest else { return nil }
        guard holding < newest else { return PixelRegion() }
        guard let oldest = entries.first?.picture, holding + 1 >= oldest else { return nil }
        var region = PixelRegion()
        for entry in entries where entry.picture > holding {
            guard let changed = entry.region else { return nil }
            region.formUnion(changed)
        }
        return region
    }
}
