@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayHTTP
import FrameRelayJanus

/// Many WebRTC subscribers in one process: groups of viewers, each on a
/// Janus mountpoint and a link of its own, joined one after the other
/// through Janus's API, then watched on one event loop
/// (``SubscriberLoop``) while this thread keeps their sessions alive.
public final class Audience {
    public let groups: [AudienceGroup]
    private let log: (String) -> Void
    private let context: DTLSContext
    private let loop: SubscriberLoop
    /// Each joined viewer's Janus session, with its group.
    private var sessions: [(group: Int, viewer: JanusViewer)] = []
    private var groupErrors: [Int: String] = [:]
    /// Each group's mountpoint's simulcast layers, asked of Janus at its first join.
    private var groupLayers: [Int: (count: Int, bitrates: [Int]?)] = [:]
    private let layerRequests = LayerRequests()
    private var joinedAt: [Int: [Double]] = [:]
    /// Janus ends a session silent for 60 s.
    static let keepaliveInterval: UInt64 = 25_000_000_000

    /// Sets up (a DTLS certificate, the loop); `log` gets one line per group that fails.
    public init(groups: [AudienceGroup], log: @escaping (String) -> Void) throws(SubscriberError) {
        self.groups = groups
        self.log = log
        context = try DTLSContext()
        loop = try SubscriberLoop()
        // One socket a viewer.
        Processor.raiseDescriptorLimit()
    }

    /// Joins every viewer, watches for `seconds` (or until `shouldStop`),
    /// leaves, and reports; `captures`, the hosts' traces (read once the
    /// watching is over, so they hold every frame), add latency and the
    /// check of every decoded picture.
    public func run(seconds: Double, expectedFrameRate: Int = 30, captures: [String] = [], shouldStop: () -> Bool = { false }) throws -> AudienceReport {
        let started = MonotonicClock.now()
        let cpuBefore = Processor.processCPUSeconds()
        try loop.start()
        let expectedFrames = Int(seconds * Double(expectedFrameRate) * 1.5) + 64
        for (index, group) in groups.enumerated() {
            for viewer in 0..<group.viewers where groupErrors[index] == nil && !shouldStop() {
                join(group: index, decodes: group.decodes(viewer), expectedFrames: expectedFrames)
            }
        }
        let end = started + UInt64(seconds * 1e9)
        var nextKeepalive = MonotonicClock.now() + Self.keepaliveInterval
        /// Each Janus that stopped answering, and what it said.
        var janusGone: [String: String] = [:]
        let joined = loop.count
        // No viewer joined (every group said why): nothing to watch.
        while joined > 0, MonotonicClock.now() < end, !shouldStop(), loop.failure.withLock({ $0 }) == nil {
            MonotonicClock.sleep(nanoseconds: min(100_000_000, end &- MonotonicClock.now()))
            // Every viewer has stopped (Janus died, its mountpoints went): nothing is left to watch.
            if loop.ended.load(ordering: .relaxed) >= joined { break }
            // The layers viewers stepped to, asked of Janus (a failure is the next keepalive's to say).
            for (session, layer) in layerRequests.take() where janusGone[sessions[session].viewer.api.url.description] == nil {
                try? sessions[session].viewer.configure(substream: layer.substream, temporal: layer.temporal, timeout: 1)
            }
            if MonotonicClock.now() >= nextKeepalive {
                nextKeepalive += Self.keepaliveInterval
                // One after another, each within what is left of the watch: a slow Janus cannot stretch --duration.
                for (_, viewer) in sessions where janusGone[viewer.api.url.description] == nil {
                    let left = Double(end &- min(end, MonotonicClock.now())) / 1e9
                    guard left > 0.05 else { break }
                    do {
                        try viewer.keepalive(timeout: min(3, left))
                    } catch {
                        janusGone[viewer.api.url.description] = "Janus stopped answering: \(error)"
                    }
                }
                for (index, group) in groups.enumerated() { if let gone = janusGone[group.janus.description] { fail(index, gone) } }
            }
        }
        loop.stop()
        if let failure = loop.failure.withLock({ $0 }) { throw SubscriberError.system("the subscribers' loop stopped: \(failure)") }
        let now = MonotonicClock.now()
        for subscriber in loop.subscribers { subscriber.finish(now: now) }
        // Viewers that stopped: Janus gone, their mountpoint gone, or why each said.
        for (index, group) in groups.enumerated() where groupErrors[index] == nil {
            let members = loop.subscribers.filter { $0.group == index }
            if !members.isEmpty, !members.contains(where: { $0.stats.connectedMs != nil }) {
                fail(index, "none of \(members.count) viewers connected (ICE and DTLS) in the \(Int((Double(now - started) / 1e9).rounded())) s watched: \(members[0].ended ? members[0].stats.state : members[0].handshake)")
                continue
            }
            guard let stopped = members.first(where: \.ended), let session = sessions.first(where: { $0.group == index })?.viewer else { continue }
            if janusGone[group.janus.description] == nil {
                do {
                    try session.keepalive()
                } catch {
                    janusGone[group.janus.description] = "Janus stopped answering: \(error)"
                }
            }
            if let gone = janusGone[group.janus.description] {
                fail(index, gone)
            } else if session.mountpointExists(group.mountpoint) == false {
                fail(index, "mountpoint \(group.mountpoint) disappeared from Janus \(group.janus)")
            } else {
                fail(index, "\(members.filter(\.ended).count) of \(members.count) viewers stopped: \(stopped.stats.state)")
            }
        }
        // Leaving: each session ended within 5 s in all (Janus ends the rest itself a minute later).
        let leaveBy = MonotonicClock.now() + 5_000_000_000
        for (_, viewer) in sessions where janusGone[viewer.api.url.description] == nil {
            let left = Double(leaveBy &- min(leaveBy, MonotonicClock.now())) / 1e9
            guard left > 0.05 else { break }
            viewer.destroy(timeout: min(2, left))
        }
        let finished = MonotonicClock.now()
        var report = AudienceReport()
        var trace: HostTrace?
        do {
            trace = captures.isEmpty ? nil : try HostTrace(paths: captures)
        } catch {
            // The figures that need no trace are still reported.
            report.capturesError = "\(error)"
        }
        report.seconds = Double(finished - started) / 1e9
        report.cpuSeconds = Processor.processCPUSeconds() - cpuBefore
        report.groups = groups.indices.map { self.report(group: $0, trace: trace) }
        return report
    }

    /// Joins one viewer: a Janus session, `watch`, our answer, and the
    /// subscriber handed to the loop. A failure ends the group's joins with one line.
    private func join(group index: Int, decodes: Bool, expectedFrames: Int) {
        let group = groups[index]
        let api = JanusAPI(url: group.janus)
        do {
            let viewer = try JanusViewer(api: api)
            let described: (count: Int, bitrates: [Int]?)
            do {
                described = try groupLayers[index] ?? viewer.layers(of: group.mountpoint)
            } catch {
                viewer.destroy()
                throw error
            }
            groupLayers[index] = described
            let layers = described.count
            // A viewer of several layers starts on the rule's first rung: the smallest, at its full rate.
            let first = LayerRule(layers: max(1, layers), now: 0).layer
            let watchedAt = MonotonicClock.now()
            let offer: JanusOffer
            do {
                offer = try JanusOffer(parsing: try viewer.watch(group.mountpoint, layer: layers > 1 ? (first.substream, first.temporal) : nil))
            } catch {
                viewer.destroy()
                throw error
            }
            // Our candidate on the address we reach Janus's media from (its candidate's, else its API's).
            let media = offer.candidateAddress ?? group.janus.host
            guard let janusAddress = try? SocketAddress.resolve(media, port: group.janus.port, type: SOCK_DGRAM).first(where: { $0.family == AF_INET }),
                let local = SocketAddress.local(toward: janusAddress)
            else {
                viewer.destroy()
                throw SubscriberError.system("no IPv4 route to Janus's media at \(media)")
            }
            let socket: Socket
            do {
                socket = try Self.udpSocket(on: local)
            } catch {
                viewer.destroy()
                throw error
            }
            guard let bound = try? socket.localAddress() else {
                viewer.destroy()
                throw SubscriberError.system("getsockname of a viewer's socket failed")
            }
            let subscriber = try Subscriber(group: index, socket: socket, localAddress: bound, offer: offer, context: context, link: group.link,
                                            decodes: decodes, watchedAt: watchedAt, expectedFrames: expectedFrames,
                                            layers: layers, layerBitrates: described.bitrates, session: sessions.count, layerRequests: layerRequests)
            loop.add(subscriber)
            do {
                try viewer.start(answer: offer.answer(ufrag: subscriber.ufrag, password: subscriber.password, fingerprint: context.fingerprint,
                                                     address: bound.host, port: bound.port))
            } catch {
                viewer.destroy()
                throw error
            }
            sessions.append((index, viewer))
        } catch let error as JanusError {
            fail(index, "\(error)")
        } catch {
            fail(index, "\(error)")
        }
    }

    /// A non-blocking UDP socket on `local`'s address, any port.
    private static func udpSocket(on local: SocketAddress) throws(SubscriberError) -> Socket {
        do throws(SystemError) {
            let socket = try Socket(family: AF_INET, type: SOCK_DGRAM, nonBlocking: true)
            socket.setReceiveBuffer(1 << 20)
            try socket.bind(to: local.withPort(0))
            return socket
        } catch {
            throw .system("a viewer's UDP socket: \(error)")
        }
    }

    /// Says, once per group, why it failed.
    private func fail(_ group: Int, _ reason: String) {
        guard groupErrors[group] == nil else { return }
        groupErrors[group] = reason
        log("audience: \(groups[group].label): \(reason)")
    }

    private func report(group index: Int, trace: HostTrace?) -> AudienceReport.Group {
        let group = groups[index]
        let members = loop.subscribers.filter { $0.group == index }
        var result = AudienceReport.Group(share: group.share, janus: group.janus.description, mountpoint: group.mountpoint, link: group.link.description, viewers: group.viewers)
        result.error = groupErrors[index]
        result.joined = members.filter { $0.stats.connectedMs != nil }.count
        result.watching = members.filter { $0.stats.state == "watching" }.count
        result.decoders = members.filter(\.stats.decodes).count
        var latency = LatencyHistogram()
        var viewerSeconds = 0.0
        let now = MonotonicClock.now()
        for member in members {
            result.totals.add(member.stats)
            result.subscribers.append(member.stats)
            viewerSeconds += Double(now - member.watchedAt) / 1e9
            if let trace {
                let anchors = trace.anchors(of: group.share, keyframes: member.stream.keyframes)
                for (picture, at) in member.stream.frames {
                    if let found = trace.frame(of: group.share, picture: picture, at: at, anchors: anchors), !found.sent.heldBack { latency.record(at - found.sent.captured) }
                }
                for (picture, stamp, at) in member.stream.stamps {
                    // A frame the trace does not hold yet (the host writes it a few times a second) is not checked.
                    // A stamp too small to read at its layer's scale is not checked.
                    guard let found = trace.frame(of: group.share, picture: picture, at: at, anchors: anchors) else { continue }
                    guard let read = stamp.at(scale: found.scale) else {
                        result.picturesTooSmall += 1
                        continue
                    }
                    if found.sent.stamp == read { result.picturesMatched += 1 } else { result.picturesMismatched += 1 }
                }
            }
        }
        if latency.count > 0 { result.latency = AudienceReport.LatencyPercentiles(latency) }
        let firsts = members.compactMap(\.stats.firstFrameMs).sorted()
        if !firsts.isEmpty {
            result.firstFrameP50Ms = firsts[firsts.count / 2]
            result.firstFrameMaxMs = firsts.last
        }
        result.freezesPerMinute = viewerSeconds == 0 ? 0 : Double(result.totals.freezes) / (viewerSeconds / 60)
        result.framesPerSecond = viewerSeconds == 0 ? 0 : Double(result.totals.framesDecodable) / viewerSeconds
        result.kbitPerSecond = viewerSeconds == 0 ? 0 : Double(result.totals.bytesReceived) * 8 / 1000 / viewerSeconds
        return result
    }
}
