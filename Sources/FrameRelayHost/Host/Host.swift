@preconcurrency import Glibc
import FoundationEssentials
import Synchronization
import FrameRelaySystem
import FrameRelayRing
import FrameRelayRTP
import FrameRelayHTTP
import FrameRelayJanus

/// The host, wired: one ``ShareReceiver`` thread per App Group, each with
/// its ``SharePipeline`` and outputs (recording, RTP, Janus mountpoints,
/// the viewer), the status line, the trace file and the report; runs until
/// a stop condition and returns the exit status. `frame-relay run` and
/// `frame-relay demo` are this with options.
public final class Host {
    public struct Configuration {
        public var groups: [AppGroup]
        public var options = ShareReceiver.Options()
        /// One pipeline's options per group; nil when not encoding.
        public var encoding: [SharePipeline.Options]? = [SharePipeline.Options()]
        /// One stream's options per group; nil when not streaming.
        public var streaming: [RTPSession.Options]? = nil
        /// An SDP file per group (for its first destination).
        public var sdpPaths: [String] = []
        /// Janus servers to stream into (shares dealt across them in order), and the mountpoints' secret.
        public var janus: [JanusStreaming] = []
        public var janusSecret: String? = nil
        public var tracePath: String? = nil
        /// Where the viewer listens, if anywhere.
        public var http: ListenAddress? = nil
        public var frames: UInt64? = nil
        public var duration: Double? = nil
        public var exitWhenFinished = false
        public var reportPath: String? = nil
        public var quiet = false
        /// Exit 1 when a share took fewer frames than this (a CI job that moved nothing fails).
        public var expectFrames: UInt64? = nil

        public init(groups: [AppGroup]) { self.groups = groups }
    }

    public let configuration: Configuration
    private let log: @Sendable (String) -> Void

    /// `log` takes every line the host says (status lines go to stderr themselves).
    public init(_ configuration: Configuration, log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.log = log
    }

    /// Runs until a stop condition (`shouldStop`, the duration, the frame
    /// count, every producer finished); returns the exit status. `onReady`
    /// runs once everything is set up (files open, ports bound), before the
    /// first frame is taken; `onTick` gets every share's statistics ten times a second.
    public func run(
        shouldStop: @escaping () -> Bool, onReady: () throws -> Void = {}, onTick: ([ShareStats]) -> Void = { _ in }
    ) throws -> Int32 {
        let s = configuration
        let log = self.log
        let quiet = s.quiet
        let say: @Sendable (String) -> Void = { message in if !quiet { log(message) } }
        // An App Group another host serves (or is about to) is refused before any output is opened or truncated.
        let claims = try s.groups.map { group throws(RingError) in try HostClaim(group) }
        defer { withExtendedLifetime(claims) {} }
        for group in s.groups {
            if let pid = RingHost.otherHost(of: group) { throw RingError.appGroupHosted(appGroup: group.name, holder: RingError.Holder(pid: pid)) }
        }
        // The files written all along (recordings, the trace) next, each locked: one another live host
        // writes is refused before Janus or anything else is touched.
        let recorders = try s.encoding?.map { options in
            try options.recordPath.map { path throws(RecordingError) in try ShareRecording.open(path, frameRate: options.settings.frameRate) }
        }
        let traceFile = try s.tracePath.map { try TraceFile(path: $0) }
        // Janus first: each share's mountpoint says where its RTP goes (a mountpoint that fails later is said, quiet or not).
        let janus = try JanusShares(s.groups, servers: s.janus, secret: s.janusSecret, log: log)
        defer { janus.close(log: log) }
        // Janus alone is a stream too: a session per share for it.
        var streaming = s.streaming ?? (janus.mountpoints.isEmpty ? nil : s.groups.map { _ in RTPSession.Options() })
        for (index, mountpoint) in janus.mountpoints.enumerated() {
            streaming?[index].destinations.append(try Destination("\(mountpoint.host.contains(":") ? "[\(mountpoint.host)]" : mountpoint.host):\(mountpoint.rtpPort)").withRTCPPort(mountpoint.rtcpPort))
            say("\(s.groups[index]): Janus mountpoint \(mountpoint.id) on \(mountpoint.janus)" + (mountpoint.reclaimed ? " (taken back from an earlier host)" : "") + ", RTP to port \(mountpoint.rtpPort), RTCP to \(mountpoint.rtcpPort)")
        }
        let receivers = s.groups.indices.map { index in
            var options = s.options
            options.janus = janus.mountpoints.indices.contains(index) ? janus.mountpoints[index] : nil
            options.quiet = quiet
            return ShareReceiver(appGroup: s.groups[index], options: options, trace: s.tracePath != nil, log: log)
        }
        /// Appends every pending per-frame record as a JSON line (off the frame path).
        func drainTraces() {
            guard let traceFile else { return }
            for receiver in receivers {
                receiver.trace?.drain { traceFile.append($0.jsonLine(share: receiver.appGroup.name)) }
            }
            traceFile.flush()
        }
        let transports = try streaming.map { try $0.map { try RTPSession(options: $0) } }
        for (index, path) in s.sdpPaths.enumerated() {
            guard let session = transports?[index] else { break }
            try OutputFile.write(SDP.vp8(ssrc: session.ssrc, destination: session.options.destinations[0]), to: path)
        }
        for (group, session) in zip(s.groups, transports ?? []) {
            say("\(group): RTP to " + session.options.destinations.map(\.description).joined(separator: ", ") + ", SSRC \(session.ssrc), RTCP on port \(session.rtcpPort)")
        }
        let broadcasts = s.http == nil ? nil : receivers.map { _ in FrameBroadcast() }
        // Pipelines before the viewer: bad settings and unwritable recordings fail before any frame.
        let pipelines = try s.encoding.map {
            try $0.enumerated().map { index, options in
                let sinks: [(any FrameSink)?] = [transports?[index], broadcasts?[index]]
                return try SharePipeline(options: options, recorder: recorders?[index], sinks: sinks.compactMap { $0 })
            }
        }
        if let http = s.http, let broadcasts {
            let viewer = try ViewerServer(address: http.address, port: http.port, shares: zip(receivers, broadcasts).map { receiver, broadcast in
                ViewerServer.Share(appGroup: receiver.appGroup.name, broadcast: broadcast, keyframes: receiver.keyframes, stats: { receiver.snapshot })
            })
            viewer.start()
            log("viewer: \(viewer.url)   (ffplay \(viewer.url)stream.ivf)" + (viewer.listensEverywhere ? "   on every interface" : ""))
            for (index, mountpoint) in janus.mountpoints.enumerated() {
                log("viewer over WebRTC through Janus: \(viewer.url)?mode=webrtc&share=\(index)   (mountpoint \(mountpoint.id))")
            }
        }
        try onReady()
        let threads = ShareThreads()
        for (index, receiver) in receivers.enumerated() {
            let share = ShareThread(receiver: receiver, pipeline: pipelines?[index])
            let started = startDetachedThread {
                do {
                    try share.receiver.run(shouldStop: { threads.stop.load(ordering: .relaxed) }, pipeline: share.pipeline)
                } catch {
                    threads.failure.withLock { $0 = "\(error)" }
                }
                threads.done.wrappingAdd(1, ordering: .releasing)
            }
            if !started { throw SystemError("pthread_create", "share \(receiver.appGroup)", code: .noSpace) }
        }
        say("waiting for frames on " + s.groups.map(\.name).joined(separator: ", "))
        let status = StatusLine(enabled: !quiet)
        let start = MonotonicClock.now()
        var hints = HostHints()
        while true {
            MonotonicClock.sleep(nanoseconds: 100_000_000)
            let snapshots = receivers.map(\.snapshot)
            for line in hints.lines(for: snapshots, since: start, quiet: quiet) { log(line) }
            status.update(snapshots)
            drainTraces()
            onTick(snapshots)
            if threads.failure.withLock({ $0 }) != nil { break }
            if shouldStop() { break }
            if let duration = s.duration, Double(MonotonicClock.now() &- start) / 1e9 >= duration { break }
            if let frames = s.frames, snapshots.allSatisfy({ $0.taken >= frames }) { break }
            if s.exitWhenFinished, receivers.allSatisfy(\.producerFinished) { break }
        }
        threads.stop.store(true, ordering: .relaxed)
        while threads.done.load(ordering: .acquiring) < receivers.count { MonotonicClock.sleep(nanoseconds: 5_000_000) }
        status.clear()
        drainTraces()
        let finals = receivers.map(\.snapshot)
        for share in finals { say("summary: " + StatusLine.format(share)) }
        // What each recording holds, however the run ended (Ctrl-C too): a stopped one is said below, as an error.
        for share in finals {
            guard let recording = share.recording, recording.stopped == nil, recording.frames > 0 else { continue }
            say("\(share.appGroup): recorded \(recording.frames) frames, \(fixed(recording.seconds, 1)) s, \(recording.bytes) bytes to \(recording.path)")
        }
        if let path = s.reportPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try OutputFile.write(String(decoding: try encoder.encode(finals), as: UTF8.self), to: path)
        }
        if let message = threads.failure.withLock({ $0 }) {
            log("error: \(message)")
            return 1
        }
        // What was asked that did not happen, quiet or not: a recording that stopped or holds nothing, a stream that sent nothing.
        let troubles = finals.indices.flatMap { index in Self.troubles(finals[index], streams: streaming?[index].destinations.isEmpty == false) }
        for line in troubles { log("error: " + line) }
        if !troubles.isEmpty { return 1 }
        if let expected = s.expectFrames, let short = finals.first(where: { $0.taken < expected }) {
            log("error: \(short.appGroup) took \(short.taken) frames, fewer than --expect-frames \(expected)"
                + (short.producerAttaches == 0 ? " (no producer attached: is broadcast-sim running with this --app-group?)" : ""))
            return 1
        }
        return 0
    }
}

extension Host {
    /// What `share` was asked for and did not do: its recording stopped,
    /// or it recorded or (when it `streams`) streamed nothing.
    static func troubles(_ share: ShareStats, streams: Bool) -> [String] {
        var lines: [String] = []
        let why = share.producerAttaches == 0 ? " (no producer attached: is broadcast-sim running with this --app-group?)" : share.taken == 0 ? " (no frame came)" : ""
        if let recording = share.recording {
            if let reason = recording.stopped {
                lines.append("\(share.appGroup): the recording \(recording.path) stopped after \(recording.frames) frames: \(reason)")
            } else if recording.frames == 0 {
                lines.append("\(share.appGroup): recorded nothing to \(recording.path)\(why)" + (recording.removed ? "; no file left" : ""))
            }
        }
        if streams, (share.transport?.frames ?? 0) == 0 { lines.append("\(share.appGroup): streamed nothing\(why)") }
        return lines
    }
}

/// What the share threads and the host's loop share: stop, how many have ended, the first error.
private final class ShareThreads: Sendable {
    let stop = Atomic<Bool>(false)
    let done = Atomic<Int>(0)
    let failure = Locked<String?>(nil)
}

/// A share's receiver and pipeline, handed to the one thread that runs them.
private struct ShareThread: @unchecked Sendable {
    // @unchecked Sendable: each is moved to exactly one share thread, which alone uses it.
    let receiver: ShareReceiver
    let pipeline: SharePipeline?
}
