@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRTP
import FrameRelayJanus

/// One WebRTC subscriber of a Janus streaming mountpoint, without decoding
/// (or, one in K, decoding too): an ICE-lite agent that answers Janus's
/// connectivity checks, a DTLS client, SRTP, and RTCP feedback as a browser
/// sends it (receiver reports, NACK, PLI). It follows the stream's frames
/// (``FrameTracker``) and counts loss, recoveries, freezes and keyframe
/// waits. Single-threaded: only its ``SubscriberLoop`` calls it.
final class Subscriber {
    let group: Int
    let socket: Socket
    /// The address Janus reaches it at, and its ICE credentials.
    let localAddress: SocketAddress
    let ufrag: String
    let password: String
    private let ufragBytes: [UInt8]
    private let passwordBytes: [UInt8]
    let offer: JanusOffer
    /// When it asked Janus to watch (CLOCK_MONOTONIC ns).
    let watchedAt: UInt64
    private var peer: SocketAddress?
    private let dtls: DTLSClient
    private var dtlsStarted = false
    private var srtp: SRTPSession?
    let stream: StreamFollower
    private let inbound: ImpairedPath?
    private let outbound: ImpairedPath?
    private let ssrc = UInt32.random(in: 1...UInt32.max)
    /// Janus's SSRCs this viewer decrypts.
    private var ssrcs: SSRCFilter
    private(set) var stats = SubscriberStats()
    private var asking: [UInt16] = []
    private let scratch: UnsafeMutableRawPointer
    private var firstRequest: UInt64?
    private var nextReport: UInt64 = 0
    private var lastPLI: UInt64 = 0
    /// When the last datagram of any kind from Janus came.
    private var lastHeard: UInt64 = 0
    static let reportInterval: UInt64 = 1_000_000_000
    /// Sequence numbers per NACK packet.
    static let nackBatch = 100
    static let pliInterval: UInt64 = 500_000_000
    /// Media must start within this long of the answer.
    static let startLimit: UInt64 = 10_000_000_000
    /// Janus sends a Sender Report every second once it has relayed media,
    /// and its ICE checks: nothing at all for this long means it is gone.
    static let silenceLimit: UInt64 = 5_000_000_000

    /// Where it asks for another simulcast layer (the joining thread sends the `configure`), and its place there.
    private let layerRequests: LayerRequests?
    let session: Int
    /// Since when it watches its layer.
    private var layerSince: UInt64

    /// `layers`: the mountpoint's simulcast layers (one: no choosing), of `layerBitrates` when it says;
    /// the viewer watches ``LayerRule``'s first rung from `watchedAt`.
    init(group: Int, socket: consuming Socket, localAddress: SocketAddress, offer: JanusOffer, context: DTLSContext,
         link: LinkConditions, decodes: Bool, watchedAt: UInt64, expectedFrames: Int,
         layers: Int = 1, layerBitrates: [Int]? = nil, session: Int = 0, layerRequests: LayerRequests? = nil) throws(SubscriberError) {
        self.group = group
        self.session = session
        self.layerRequests = layers > 1 ? layerRequests : nil
        layerSince = watchedAt
        self.socket = socket
        self.localAddress = localAddress
        self.offer = offer
        self.watchedAt = watchedAt
        ufrag = Self.randomToken(8)
        password = Self.randomToken(24)
        ufragBytes = Array(ufrag.utf8)
        passwordBytes = Array(password.utf8)
        dtls = try DTLSClient(context: context, fingerprint: offer.fingerprint)
        stream = try StreamFollower(payloadType: offer.payloadType, retransmissionPayloadType: offer.rtxPayloadType, decodes: decodes, expectedFrames: expectedFrames)
        inbound = link.isPerfect ? nil : ImpairedPath(link, limitsRate: true, capacity: 384 << 10)
        outbound = link.isPerfect ? nil : ImpairedPath(link, limitsRate: false, capacity: 96 << 10)
        scratch = .allocate(byteCount: 2048, alignment: 16)
        ssrcs = SSRCFilter(offered: offer.ssrcs)
        stats.decodes = decodes
        asking.reserveCapacity(Self.nackBatch)
        stream.timelineStart = watchedAt
        if layers > 1 {
            stream.layerRule = LayerRule(layers: layers, bitrates: layerBitrates, now: Double(watchedAt) / 1e6)
            stats.layer = stream.layerRule?.layer.description
            stats.firstLayer = stats.layer
        }
    }

    /// Adds the time since the last step to the layer watched.
    private func countLayerTime(now: UInt64) {
        guard let layer = stats.layer else { return }
        stats.layerMs[layer, default: 0] += Double(now &- layerSince) / 1e6
        layerSince = now
    }

    deinit { scratch.deallocate() }

    /// ICE credentials are letters and digits (RFC 8839 ice-char).
    private static func randomToken(_ length: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<length).map { _ in alphabet.randomElement()! })
    }

    /// Whether it has stopped (Janus hung up, the handshake failed, silence).
    var ended: Bool { stats.state != "joining" && stats.state != "watching" }

    /// How far the handshake got: what a viewer that never connected says.
    var handshake: String { dtlsStarted ? "DTLS \(dtls.state == .connected ? "connected" : "did not connect")" : "no ICE check from Janus" }

    private func end(_ reason: String) {
        guard !ended else { return }
        stats.state = reason
    }

    // MARK: - Datagrams in

    /// A datagram arrived at `now` from `source`: through the link first, if it has one.
    func arrived(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: UInt64) {
        guard !ended else { return }
        if let inbound {
            _ = inbound.admit(UnsafeRawBufferPointer(datagram), address: source, now: now)
        } else {
            handle(datagram, from: source, now: now)
        }
    }

    /// Demultiplexes one datagram (RFC 7983 by its first byte): STUN, DTLS, or SRTP and SRTCP.
    private func handle(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: UInt64) {
        guard let first = datagram.first else { return }
        if let peer, source.isSame(as: peer) { lastHeard = now }
        switch first {
        case 0...3: handleSTUN(UnsafeRawBufferPointer(datagram), from: source, now: now)
        case 20...63:
            guard let peer, source.isSame(as: peer) else { return }
            dtls.receive(UnsafeRawBufferPointer(datagram)) { send($0, now: now) }
            afterDTLS(now: now)
        case 128...191:
            guard let srtp, let peer, source.isSame(as: peer), datagram.count >= 12 else { return }
            // Only the offer's streams reach libsrtp, which keeps state for every SSRC it authenticates.
            let rtcp = (192...223).contains(datagram[1])
            let ssrc = UInt32(bigEndian: UnsafeRawBufferPointer(datagram).loadUnaligned(fromByteOffset: rtcp ? 4 : 8, as: UInt32.self))
            guard ssrcs.accepts(ssrc) else {
                stats.strangeSSRCs += 1
                return
            }
            if rtcp {
                guard let length = srtp.unprotectRTCP(datagram) else {
                    stats.srtpFailures += 1
                    return
                }
                handleRTCP(UnsafeRawBufferPointer(rebasing: datagram[..<length]), now: now)
            } else {
                guard let length = srtp.unprotectRTP(datagram) else {
                    stats.srtpFailures += 1
                    return
                }
                handleRTP(UnsafeRawBufferPointer(rebasing: datagram[..<length]), now: now)
            }
        default:
            break
        }
    }

    private func handleSTUN(_ packet: UnsafeRawBufferPointer, from source: SocketAddress, now: UInt64) {
        // Indications (libnice's keepalives) ask for nothing.
        guard STUN.isRequest(packet) else { return }
        guard let request = STUN.parseRequest(packet, localUfrag: ufragBytes, password: passwordBytes), let address = source.ipv4 else {
            stats.stunRefused += 1
            return
        }
        stats.stunAnswered += 1
        // The pair Janus nominates is where media and DTLS go; before a nomination, the first that checks.
        if peer == nil || request.nominated { peer = source }
        firstRequest = firstRequest ?? now
        let length = STUN.writeSuccess(into: scratch, request: request, address: address, port: UInt16(source.port), password: passwordBytes)
        send(UnsafeRawBufferPointer(start: scratch, count: length), to: source, now: now)
        if request.nominated { startDTLS(now: now) }
    }

    /// The handshake starts once Janus nominated the pair (its ICE is then
    /// connected and takes DTLS), or 300 ms after its first check.
    private func startDTLS(now: UInt64) {
        guard !dtlsStarted, peer != nil else { return }
        dtlsStarted = true
        dtls.start { send($0, now: now) }
        afterDTLS(now: now)
    }

    private func afterDTLS(now: UInt64) {
        switch dtls.state {
        case .handshaking:
            break
        case .connected where srtp == nil:
            do {
                srtp = try SRTPSession(keys: dtls.keys!)
                stats.state = "watching"
                stats.connectedMs = Double(now - watchedAt) / 1e6
            } catch {
                end("SRTP: \(error)")
            }
        case .connected:
            break
        case .closed(let reason):
            end(reason)
        }
    }

    private func handleRTCP(_ packet: UnsafeRawBufferPointer, now: UInt64) {
        // Janus's Sender Reports: their time goes back in our reports (LSR, DLSR), so Janus sees the round trip.
        var offset = 0
        while offset + 8 <= packet.count {
            let length = (Int(packet[offset + 2]) << 8 | Int(packet[offset + 3]) + 1) * 4
            guard offset + length <= packet.count else { return }
            if packet[offset + 1] == RTCP.senderReport, length >= 28 {
                stats.senderReports += 1
                stream.senderReport(ntp: UInt64(bigEndian: packet.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)), arrival: now)
            }
            offset += length
        }
    }

    private func handleRTP(_ packet: UnsafeRawBufferPointer, now: UInt64) {
        guard stream.receive(packet, now: now) else { return }
        if stream.takeLostFrame() { sendPLI(now: now) }
        requestMissing(now: now)
    }

    // MARK: - Datagrams out

    private func send(_ datagram: UnsafeRawBufferPointer, now: UInt64) {
        guard let peer else { return }
        send(datagram, to: peer, now: now)
    }

    private func send(_ datagram: UnsafeRawBufferPointer, to address: SocketAddress, now: UInt64) {
        if let outbound {
            _ = outbound.admit(datagram, address: address, now: now)
        } else {
            _ = try? socket.send(datagram, to: address)
        }
    }

    /// Protects the `length` bytes of RTCP in ``scratch`` and sends them.
    private func sendRTCP(length: Int, now: UInt64) -> Bool {
        guard let srtp, let protected = srtp.protectRTCP(scratch, length: length) else { return false }
        send(UnsafeRawBufferPointer(start: scratch, count: protected), now: now)
        return true
    }

    private func requestMissing(now: UInt64) {
        guard let media = stream.mediaSSRC else { return }
        asking.removeAll(keepingCapacity: true)
        stream.missingDue(now: now, into: &asking)
        var start = 0
        while start < asking.count {
            let end = min(asking.count, start + Self.nackBatch)
            var length = RTCP.writeEmptyReceiverReport(into: scratch, sender: ssrc)
            length += RTCP.writeNACK(into: scratch + length, sender: ssrc, media: media, sequences: asking[start..<end])
            _ = sendRTCP(length: length, now: now)
            start = end
        }
    }

    private func sendPLI(now: UInt64) {
        guard let media = stream.mediaSSRC, now &- lastPLI >= Self.pliInterval else { return }
        lastPLI = now
        var length = RTCP.writeEmptyReceiverReport(into: scratch, sender: ssrc)
        length += RTCP.writePLI(into: scratch + length, sender: ssrc, media: media)
        if sendRTCP(length: length, now: now) { stats.plisSent += 1 }
    }

    private func sendReport(now: UInt64) {
        guard let media = stream.mediaSSRC, let block = stream.reportBlock(now: now) else { return }
        let length = RTCP.writeReceiverReport(into: scratch, sender: ssrc, media: media, block: block)
        if sendRTCP(length: length, now: now) { stats.receiverReports += 1 }
    }

    // MARK: - Time

    /// Does what is due at `now` (the link's held packets, DTLS
    /// retransmissions, NACK retries, reports, giving up on a lost frame,
    /// PLIs while waiting for a keyframe) and returns when it next needs to.
    func tick(now: UInt64) -> UInt64 {
        var next = now + 50_000_000
        guard !ended else { return now + 1_000_000_000 }
        inbound?.release(now: now) { datagram, source in handle(datagram, from: source, now: now) }
        outbound?.release(now: now) { datagram, address in _ = try? socket.send(UnsafeRawBufferPointer(datagram), to: address) }
        if let first = firstRequest, !dtlsStarted, now &- first >= 300_000_000 { startDTLS(now: now) }
        if let due = dtls.retransmitDue {
            if due == 0 {
                dtls.handleTimeout { send($0, now: now) }
                afterDTLS(now: now)
            } else {
                next = min(next, now + UInt64(due) * 1000)
            }
        }
        if srtp != nil {
            if now >= nextReport {
                nextReport = now + Self.reportInterval
                sendReport(now: now)
            }
            next = min(next, nextReport)
            if stream.isMissing {
                requestMissing(now: now)
                next = min(next, now + 10_000_000)
            }
            if let due = stream.tick(now: now) { next = min(next, due) }
            if let step = stream.layerStep(now: now), let layerRequests {
                countLayerTime(now: now)
                stats.layer = step.description
                stats.layerSwitches += 1
                if stats.layerSteps.count < 1000 { stats.layerSteps.append(.init(ms: Double(now &- watchedAt) / 1e6, layer: step.description)) }
                layerRequests.ask(session: session, step)
            }
            // No keyframe yet while frames come, or a keyframe waited for: ask (again) every half second.
            if stream.wantsKeyframe || stream.takeLostFrame() {
                sendPLI(now: now)
                next = min(next, lastPLI + Self.pliInterval)
            }
        }
        if stream.lastPacket == nil, now &- watchedAt > Self.startLimit {
            end("no media from Janus within \(Self.startLimit / 1_000_000_000) s (\(handshake))")
        } else if stream.lastPacket != nil, now &- lastHeard > Self.silenceLimit {
            end("nothing from Janus for \(Self.silenceLimit / 1_000_000_000) s (no media, no Sender Report)")
        }
        if let due = inbound?.nextDue { next = min(next, due) }
        if let due = outbound?.nextDue { next = min(next, due) }
        return next
    }

    /// Says goodbye to Janus's DTLS (close_notify) and fills in the final figures.
    func finish(now: UInt64) {
        dtls.close { send($0, now: now) }
        countLayerTime(now: now)
        stream.fill(&stats, now: now)
        stats.firstPacketMs = stream.firstPacket.map { Double($0 - watchedAt) / 1e6 }
        stats.firstFrameMs = stream.firstFrame.map { Double($0 - watchedAt) / 1e6 }
        stats.linkLostIn = inbound?.lost ?? 0
        stats.linkQueueDrops = inbound?.overflowed ?? 0
        stats.linkBufferDrops = (inbound?.bufferFull ?? 0) + (outbound?.bufferFull ?? 0)
        stats.linkLostOut = outbound?.lost ?? 0
    }
}
