import FrameRelaySystem
import FrameRelayHTTP

/// What a subscriber needs from the SDP offer Janus makes for a
/// streaming mountpoint: ICE credentials, the DTLS fingerprint, and the
/// video section's mid and VP8 payload type.
package struct JanusOffer: Equatable {
    package var iceUfrag: String
    package var icePassword: String
    /// SHA-256 of Janus's DTLS certificate.
    package var fingerprint: [UInt8]
    package var mid: String
    package var payloadType: Int
    /// The payload type of retransmissions in their own stream (RFC 4588 `rtx`, its `apt` VP8's), when Janus offers them.
    package var rtxPayloadType: Int?
    /// The IPv4 address of Janus's first host candidate: where its media comes from (not always its API's address).
    package var candidateAddress: String?
    /// The SSRCs the video section names (`a=ssrc`: the stream and its retransmissions); empty when it names none.
    package var ssrcs: [UInt32] = []

    /// Parses `sdp`; throws a ``JanusOfferError`` naming what is missing.
    package init(parsing sdp: String) throws(JanusOfferError) {
        var ufrag: String?, password: String?, fingerprint: [UInt8]?, mid: String?, vp8: Int?, video = false, videoLine = false
        var rtx: [Int: Int] = [:]  // rtx payload type → the payload type it repairs
        var rtxTypes: Set<Int> = []
        var candidateAddress: String?
        var ssrcs: [UInt32] = []
        for raw in sdp.split(whereSeparator: \.isNewline) {
            let line = raw.drop { $0 == " " }
            if line.hasPrefix("m=") {
                // Only the first video section is ours; what others say is theirs.
                video = line.hasPrefix("m=video ") && !videoLine
                videoLine = videoLine || video
                continue
            }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let (name, value) = attribute.firstIndex(of: ":").map { (attribute[..<$0], String(attribute[attribute.index(after: $0)...])) } ?? (attribute, "")
            switch name {
            case "ice-ufrag" where ufrag == nil || video: ufrag = value
            case "ice-pwd" where password == nil || video: password = value
            case "fingerprint" where fingerprint == nil || video:
                let parts = value.split(separator: " ")
                guard parts.count == 2, parts[0].lowercased() == "sha-256" else { continue }
                let bytes = parts[1].split(separator: ":").compactMap { UInt8($0, radix: 16) }
                if bytes.count == 32 { fingerprint = bytes }
            case "mid" where video: mid = value
            case "candidate" where candidateAddress == nil:
                // "1 1 udp 2015363327 10.200.0.1 47569 typ host"
                let parts = value.split(separator: " ")
                if parts.count >= 8, parts[2].lowercased() == "udp", parts[7] == "host", Self.isUnicastIPv4(parts[4]) { candidateAddress = String(parts[4]) }
            case "rtpmap" where video:
                // "96 VP8/90000"
                let parts = value.split(separator: " ")
                if parts.count == 2, parts[1].uppercased().hasPrefix("VP8/90000"), let type = Int(parts[0]), vp8 == nil { vp8 = type }
                if parts.count == 2, parts[1].lowercased().hasPrefix("rtx/90000"), let type = Int(parts[0]) { rtxTypes.insert(type) }
            case "ssrc" where video:
                // "1072619482 cname:janus": each SSRC once, a few at most (a stream and its retransmissions).
                if let ssrc = value.split(separator: " ").first.flatMap({ UInt32($0) }), !ssrcs.contains(ssrc), ssrcs.count < Self.ssrcLimit { ssrcs.append(ssrc) }
            case "fmtp" where video:
                // "97 apt=96"
                let parts = value.split(separator: " ")
                if parts.count == 2, let type = Int(parts[0]), parts[1].hasPrefix("apt="), let repaired = Int(parts[1].dropFirst(4)) { rtx[type] = repaired }
            default: break
            }
        }
        guard videoLine else { throw JanusOfferError("Janus's offer has no video section") }
        guard let vp8 else { throw JanusOfferError("Janus's offer has no VP8 in its video section") }
        guard let ufrag, let password, !ufrag.isEmpty, !password.isEmpty else { throw JanusOfferError("Janus's offer has no ICE credentials") }
        guard let fingerprint else { throw JanusOfferError("Janus's offer has no sha-256 DTLS fingerprint") }
        iceUfrag = ufrag
        icePassword = password
        self.fingerprint = fingerprint
        self.mid = mid ?? "v"
        payloadType = vp8
        rtxPayloadType = rtxTypes.filter { rtx[$0] == vp8 }.min()
        self.candidateAddress = candidateAddress
        self.ssrcs = ssrcs
    }

    /// The most SSRCs of the video section kept (a stream and its retransmissions, with room).
    package static let ssrcLimit = 4

    /// A dotted-quad unicast IPv4 address: never a name to look up (the
    /// offer's words are not sent to DNS), nor 0.0.0.0, multicast or broadcast.
    package static func isUnicastIPv4(_ text: some StringProtocol) -> Bool {
        guard let value = SocketAddress(ipv4: String(text), port: 0)?.ipv4 else { return false }
        return value != 0 && value >> 28 != 0xE && value != 0xFFFF_FFFF
    }

    /// The answer of an ICE-lite, recv-only, DTLS-client peer at `address:port`
    /// that takes retransmissions as Janus offers them (in an RTX stream when it does).
    package func answer(ufrag: String, password: String, fingerprint: String, address: String, port: Int) -> String {
        let types = rtxPayloadType.map { "\(payloadType) \($0)" } ?? "\(payloadType)"
        var lines = [
            "v=0",
            "o=- \(UInt32.random(in: 1...UInt32.max)) 1 IN IP4 \(address)",
            "s=-",
            "t=0 0",
            "a=group:BUNDLE \(mid)",
            "a=ice-lite",
            "m=video 9 UDP/TLS/RTP/SAVPF \(types)",
            "c=IN IP4 \(address)",
            "a=mid:\(mid)",
            "a=recvonly",
            "a=rtcp-mux",
            "a=ice-ufrag:\(ufrag)",
            "a=ice-pwd:\(password)",
            "a=fingerprint:\(fingerprint)",
            "a=setup:active",
            "a=rtpmap:\(payloadType) VP8/90000",
            "a=rtcp-fb:\(payloadType) nack",
            "a=rtcp-fb:\(payloadType) nack pli",
        ]
        if let rtx = rtxPayloadType { lines += ["a=rtpmap:\(rtx) rtx/90000", "a=fmtp:\(rtx) apt=\(payloadType)"] }
        lines += ["a=candidate:1 1 udp 2130706431 \(address) \(port) typ host", "a=end-of-candidates", ""]
        return lines.joined(separator: "\r\n")
    }

}

/// What Janus's SDP offer lacks that a viewer needs (VP8, ICE credentials, a fingerprint): one line.
package struct JanusOfferError: Error, CustomStringConvertible, Equatable {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}
