/// What changed in a picture since the one before it, as its source knows
/// it. It travels with the frame from the source, through the sample
/// handler, into the ring's slot, where the host reads it to convert and
/// compare only what changed.
public enum Damage: Sendable, Equatable {
    /// The picture is byte for byte the one before (a still screen).
    case none
    /// It changed only inside this region (a redrawn area, the display's damage).
    case region(PixelRegion)
    /// The source cannot tell: anything may have changed.
    case unknown

    /// Changed only inside `region`: ``none`` when it is empty.
    public static func within(_ region: PixelRegion) -> Damage { region.isEmpty ? .none : .region(region) }
}
