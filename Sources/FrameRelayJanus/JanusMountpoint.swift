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
    /// Taken back from an earlier host of the same App Group that did not destroy it (a `kill -9`).
    public var reclaimed: Bool

    /// The mountpoint id of an App Group: the same for every host of it,
    /// and below 2^53 so that a browser's JavaScript holds it exactly.
    public static func id(for appGroup: AppGroup) -> UInt64 { appGroup.hash >> 12 | 1 }
}

extension JanusStreaming {
    /// Creates the App Group's mountpoint (VP8, payload type 96, with an
    /// RTCP port so that Janus's PLIs reach the host), or takes back the one
    /// an earlier host of the same App Group left, with the same ports, so
    /// that viewers already watching keep watching.
    public func openMountpoint(for appGroup: AppGroup, secret: String?) throws(JanusError) -> JanusMountpoint {
        let id = JanusMountpoint.id(for: appGroup)
        var request: [String: JSONValue] = [
            "request": "create", "type": "rtp", "id": .integer(Int64(id)), "name": .string(appGroup.name), "description": .string(appGroup.name),
            "media": [["type": "video", "mid": "v", "port": 0, "rtcpport": 0, "pt": 96, "codec": "vp8"]],
            // Viewers may ask for a playout delay (`configure` min_delay/max_delay); none is sent until one does.
            "playoutdelay_ext": true,
        ]
        if let secret { request["secret"] = .string(secret) }
        if let adminKey { request["admin_key"] = .string(adminKey) }
        let ports: (rtp: UInt64?, rtcp: UInt64?)
        var reclaimed = false
        do {
            let created = try call(.object(request))
            let port = created["stream"]?["ports"]?.array?.first
            ports = (port?["port"]?.unsigned, port?["rtcp_port"]?.unsigned)
        } catch where error.code == JanusError.idTaken {
            let existing = try call(Self.request("info", mountpoint: id, secret: secret))["info"]
            let name = existing?["name"]?.string ?? existing?["description"]?.string ?? "?"
            guard name == appGroup.name else {
                throw JanusError(url: url.description, code: JanusError.idTaken, reason: "mountpoint \(id) is taken by \"\(name)\", not \(appGroup.name)")
            }
            let media = existing?["media"]?.array?.first
            ports = (media?["port"]?.unsigned, media?["rtcpport"]?.unsigned)
            reclaimed = true
        }
        guard let rtp = ports.rtp, let rtcp = ports.rtcp, (1...65535).contains(rtp), (1...65535).contains(rtcp), rtp != rtcp else {
            throw JanusError(url: url.description, code: 0, reason: "mountpoint \(id) has RTP port \(ports.rtp ?? 0) and RTCP port \(ports.rtcp ?? 0): expected two ports (is its secret right?)")
        }
        return JanusMountpoint(janus: url.description, id: id, name: appGroup.name, host: url.host, rtpPort: Int(rtp), rtcpPort: Int(rtcp), reclaimed: reclaimed)
    }

    /// Asks Janus about the mountpoint; throws when Janus is gone or has lost it.
    public func check(_ mountpoint: JanusMountpoint, secret: String?) throws(JanusError) {
        _ = try call(Self.request("info", mountpoint: mountpoint.id, secret: secret))
    }

    /// Destroys a mountpoint this host opened.
    public func destroy(_ mountpoint: JanusMountpoint, secret: String?) throws(JanusError) {
        _ = try call(Self.request("destroy", mountpoint: mountpoint.id, secret: secret))
    }

    /// A streaming-plugin request about one mountpoint.
    private static func request(_ name: String, mountpoint id: UInt64, secret: String?) -> JSONValue {
        var request: [String: JSONValue] = ["request": .string(name), "id": .integer(Int64(id))]
        if let secret { request["secret"] = .string(secret) }
        return .object(request)
    }
}
