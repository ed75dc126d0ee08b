import FrameRelayHTTP

/// A group of viewers: how many watch which mountpoint, over what link,
/// and how many of them decode.
public struct AudienceGroup: Sendable, Equatable {
    /// Janus's HTTP API.
    public var janus: HTTPClient.URL
    public var mountpoint: UInt64
    /// The share it carries (its App Group): the name in the host's `--trace`.
    public var share: String
    public var viewers: Int
    public var link: LinkConditions
    /// One viewer in this many decodes with libvpx (0: none). The first of the group always does when not 0.
    public var decodeEvery: Int

    public init(janus: HTTPClient.URL, mountpoint: UInt64, share: String, viewers: Int, link: LinkConditions = LinkConditions(), decodeEvery: Int = 0) {
        self.janus = janus
        self.mountpoint = mountpoint
        self.share = share
        self.viewers = viewers
        self.link = link
        self.decodeEvery = decodeEvery
    }

    /// How lines name the group: its share (and mountpoint) and its link.
    public var label: String {
        let name = share == "mountpoint \(mountpoint)" ? share : "\(share), mountpoint \(mountpoint)"
        return "\(name) (\(viewers) viewer\(viewers == 1 ? "" : "s"), \(link) link)"
    }

    /// Whether viewer `index` (from 0) of the group decodes.
    func decodes(_ index: Int) -> Bool { decodeEvery > 0 && index % decodeEvery == 0 }
}
