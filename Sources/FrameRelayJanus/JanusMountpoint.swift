import FrameRelayRing
import FrameRelayHTTP
/// One share's streaming mountpoint on a Janus server: where the share's
/// RTP goes, and what a WebRTC viewer asks Janus to watch.
public struct JanusMountpoint: Sendable, Codable, Equatable {
    /// The Janus HTTP API it lives on.
    public var janus: String
    public var id: UInt64
    /// The App Group it carries.
    public var name: String
    /// Where Janus takes the share's RTP and RTCP (Janus picks both ports;
    /// two mountpoints created at once can interleave them).
    public var host: String
    public var rtpPort: Int
    public var rtcpPort: Int
    /// With simulcast layers, each layer's RTP port, smallest first (Janus's
    /// `port`, `port2`, `port3`: the port a stream arrives on is its
    /// substream); one layer: `[rtpPort]`.
    public var layerPorts: [Int]
    /// Taken back from an earlier host of the same App Group that did not destroy it (a `kill -9`).
    public var reclaimed: Bool

    /// The mountpoint id of an App Group: the same for every host of it,
    /// and below 2^53 so that a browser's JavaScript holds it exactly.
    public static func id(for appGroup: AppGroup) -> UInt64 { appGroup.hash >> 12 | 1 }

    /// The description Janus lists a mountpoint of `name` with simulcast
    /// layers of `bitrates` (kbit/s, smallest first) under: "NAME layers=N
    /// kbps=A,B", which the viewer page and the subscriber read
    /// (``layers(inDescription:)``).
    public static func description(name: String, bitrates: [Int]) -> String {
        "\(name) layers=\(bitrates.count) kbps=\(bitrates.map(String.init).joined(separator: ","))"
    }

    /// What a mountpoint's description names: the App Group, the layer
    /// count (one when it names none) and their bitrates (nil when not said,
    /// or not one per layer, each 1–100,000 and rising). The grammar is
    /// strict, `NAME layers=[1-3]( kbps=A(,B)*)?` to the end, and the viewer
    /// page reads it with the same expression (`viewer.html`): anything else
    /// is one layer, so that browsers and native viewers of one mountpoint
    /// read it alike.
    public static func layers(inDescription description: String) -> (name: String, layers: Int, bitrates: [Int]?) {
        // A control character or line separator anywhere: one layer (the two languages' `.` part over U+0085).
        let unread = description.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" }
        guard !unread, let match = description.wholeMatch(of: /(.*) layers=([1-3])(?: kbps=([0-9]+(?:,[0-9]+)*))?/), let layers = Int(match.2) else {
            return (description, 1, nil)
        }
        let rates = match.3.map { $0.split(separator: ",").map { Int($0) ?? 0 } }
        let bitrates = rates.flatMap { rates in
            rates.count == layers && rates.allSatisfy({ (1...100_000).contains($0) }) && zip(rates, rates.dropFirst()).allSatisfy({ $0 < $1 }) ? rates : nil
        }
        return (String(match.1), layers, bitrates)
    }
}

extension JanusStreaming {
    /// Creates the App Group's mountpoint (VP8, payload type 96, with an
    /// RTCP port so that Janus's PLIs reach the host; with `layers` above 1,
    /// simulcast with a port per layer), or takes back the one an earlier
    /// host of the same App Group left with as many layers, with the same
    /// ports, so that viewers already watching keep watching.
    public func openMountpoint(for appGroup: AppGroup, bitrates: [Int] = [2500], secret: String?) throws(JanusError) -> JanusMountpoint {
        try openMountpoint(for: appGroup, bitrates: bitrates, secret: secret, remake: true)
    }

    /// `remake`: whether a mountpoint left with another layer count may be destroyed and made again (once).
    private func openMountpoint(for appGroup: AppGroup, bitrates: [Int], secret: String?, remake: Bool) throws(JanusError) -> JanusMountpoint {
        let layers = bitrates.count
        precondition((1...3).contains(layers))
        let id = JanusMountpoint.id(for: appGroup)
        var media: [String: JSONValue] = ["type": "video", "mid": "v", "port": 0, "rtcpport": 0, "pt": 96, "codec": "vp8"]
        if layers > 1 {
            media["simulcast"] = true
            media["port2"] = 0
            if layers > 2 { media["port3"] = 0 }
        }
        var request: [String: JSONValue] = [
            "request": "create", "type": "rtp", "id": .integer(Int64(id)), "name": .string(appGroup.name),
            "description": .string(JanusMountpoint.description(name: appGroup.name, bitrates: bitrates)),
            "media": [.object(media)],
            // Viewers may ask for a playout delay (`configure` min_delay/max_delay); none is sent until one does.
            "playoutdelay_ext": true,
        ]
        if let secret { request["secret"] = .string(secret) }
        if let adminKey { request["admin_key"] = .string(adminKey) }
        let ports: (rtp: [UInt64?], rtcp: UInt64?)
        var reclaimed = false
        do {
            let created = try call(.object(request))
            let port = created["stream"]?["ports"]?.array?.first
            ports = (["port", "port_2", "port_3"].prefix(layers).map { port?[$0]?.unsigned }, port?["rtcp_port"]?.unsigned)
        } catch where error.code == JanusError.idTaken {
            let existing = try call(Self.request("info", mountpoint: id, secret: secret))["info"]
            let description = existing?["description"]?.string ?? "?"
            let described = JanusMountpoint.layers(inDescription: description)
            // A description that names layers names the App Group before them, whatever their count says.
            let name = existing?["name"]?.string ?? (description.contains(" layers=") ? String(description.prefix { $0 != " " }) : described.name)
            guard name == appGroup.name else {
                throw JanusError(url: url.description, code: JanusError.idTaken, reason: "mountpoint \(id) is taken by \"\(name)\", not \(appGroup.name)")
            }
            guard described.layers == layers else {
                // Left with another layer count: made again, once (its viewers watch again).
                guard remake else {
                    throw JanusError(url: url.description, code: JanusError.idTaken,
                                     reason: "mountpoint \(id) of \(appGroup.name) still has \(described.layers) layers after it was destroyed and made again with \(layers)")
                }
                try destroy(id: id, secret: secret)
                return try openMountpoint(for: appGroup, bitrates: bitrates, secret: secret, remake: false)
            }
            let media = existing?["media"]?.array?.first
            ports = (["port", "port2", "port3"].prefix(layers).map { media?[$0]?.unsigned }, media?["rtcpport"]?.unsigned)
            reclaimed = true
        }
        let rtp = ports.rtp.compactMap { $0 }.filter { (1...65535).contains($0) }.map(Int.init)
        guard rtp.count == layers, let rtcp = ports.rtcp.map(Int.init), (1...65535).contains(rtcp), !rtp.contains(rtcp), Set(rtp).count == layers else {
            throw JanusError(url: url.description, code: 0, reason: "mountpoint \(id) has RTP ports \(ports.rtp.map { String($0 ?? 0) }.joined(separator: ",")) and RTCP port \(ports.rtcp ?? 0): expected \(layers + 1) ports (is its secret right?)")
        }
        return JanusMountpoint(janus: url.description, id: id, name: appGroup.name, host: url.host, rtpPort: rtp[0], rtcpPort: rtcp, layerPorts: rtp, reclaimed: reclaimed)
    }

    /// Asks Janus about the mountpoint; throws when Janus is gone or has lost it.
    public func check(_ mountpoint: JanusMountpoint, secret: String?) throws(JanusError) {
        _ = try call(Self.request("info", mountpoint: mountpoint.id, secret: secret))
    }

    /// Destroys a mountpoint this host opened.
    public func destroy(_ mountpoint: JanusMountpoint, secret: String?) throws(JanusError) {
        try destroy(id: mountpoint.id, secret: secret)
    }

    private func destroy(id: UInt64, secret: String?) throws(JanusError) {
        _ = try call(Self.request("destroy", mountpoint: id, secret: secret))
    }

    /// A streaming-plugin request about one mountpoint.
    private static func request(_ name: String, mountpoint id: UInt64, secret: String?) -> JSONValue {
        var request: [String: JSONValue] = ["request": .string(name), "id": .integer(Int64(id))]
        if let secret { request["secret"] = .string(secret) }
        return .object(request)
    }
}
