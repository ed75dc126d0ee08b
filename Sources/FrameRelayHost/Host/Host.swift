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
///
/// ``run(shouldStop:onReady:onTick:)`` is a few named steps, in the order
/// that keeps a refused host from touching anything: claim the App Groups;
/// open the files written all along; open the Janus mountpoints; open the
/// RTP streams; build the pipelines; serve the viewer; start a thread per
/// share; watch until a stop condition; then stop and say how it went.
public final class Host {
    public struct Configuration {
        /// One share: its App Group and what it does with its frames.
        public struct Share {
            public var group: AppGroup
            /// How it encodes; nil when it only takes frames (ring statistics).
            public var encoding: SharePipeline.Options?
            /// Where its RTP goes (a Janus mountpoint is added to it), and the SDP file for its first destination.
            public var streaming = RTPSession.Options()
            public var sdpPath: String?

            public init(group: AppGroup, encoding: SharePipeline.Options? = SharePipeline.Options()) {
                self.group = group
                self.encoding = encoding
            }
        }

        public var shares: [Share]
        public var options = ShareReceiver.Options()
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

        public init(shares: [Share]) { self.shares = shares }

        /// Each group encoded on the default settings.
        public init(groups: [AppGroup]) { self.init(shares: groups.map { Share(group: $0) }) }

        public var groups: [AppGroup] { shares.map(\.group) }
    }

    public let configuration: Configuration
    private let log: @Sendable (String) -> Void
    /// `log`, unless the host is quiet: progress, never what went wrong.
    private let say: @Sendable (String) -> Void

    /// `log` takes every line the host says (status lines go to stderr themselves).
    public init(_ configuration: Configuration, log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.log = log
        let quiet = configuration.quiet
        say = { message in if !quiet { log(message) } }
    }

    /// Runs until a stop condition (`shouldStop`, the duration, the frame
    /// count, every producer finished); returns the exit status. `onReady`
    /// runs once everything is set up (files open, ports bound), before the
    /// first frame is taken; `onTick` gets every share's statistics ten times a second.
    public func run(
        shouldStop: @escaping () -> Bool, onReady: () throws -> Void = {}, onTick: ([ShareStats]) -> Void = { _ in }
    ) throws -> Int32 {
        let claims = try claimAppGroups()
        defer { withExtendedLifetime(claims) {} }
        let files = try openFiles()
        let janus = try JanusShares(configuration.groups, bitrates: configuration.shares.map { $0.encoding?.layerBitrates ?? [2500] },
                                    servers: configuration.janus, secret: configuration.janusSecret, log: log)
        defer { janus.close(log: log) }
        let receivers = makeReceivers(mountpoints: janus.mountpoints)
        let streams = try openStreams(mountpoints: janus.mountpoints)
        let broadcasts = configuration.http == nil ? nil : receivers.map { _ in FrameBroadcast() }
        // Pipelines before the viewer: bad settings fail before any port is served.
        let pipelines = try configuration.shares.indices.map { index in
            try configuration.shares[index].encoding.map { options in
                let sinks: [(any FrameSink)?] = [streams[index], broadcasts?[index]]
                return try SharePipeline(options: options, recorder: files.recorders[index], sinks: sinks.compactMap { $0 })
            }
        }
        if let broadcasts { try serveViewer(receivers: receivers, broadcasts: broadcasts, mountpoints: janus.mountpoints) }
        try onReady()
        let threads = try startShares(receivers: receivers, pipelines: pipelines)
        let stoppedOnError = watch(receivers: receivers, threads: threads, files: files, shouldStop: shouldStop, onTick: onTick)
        threads.stop.store(true, ordering: .relaxed)
        while threads.done.load(ordering: .acquiring) < receivers.count { MonotonicClock.sleep(nanoseconds: 5_000_000) }
        files.drainTraces(of: receivers)
        return try finish(receivers.map(\.snapshot), failure: stoppedOnError ? threads.failure.withLock { $0 } : nil,
                          streaming: streams.map { $0 != nil })
    }

    // MARK: - The steps

    /// An App Group another host serves (or is about to) is refused before any output is opened or truncated.
    private func claimAppGroups() throws -> [HostClaim] {
        let claims = try configuration.groups.map { group throws(RingError) in try HostClaim(group) }
        for group in configuration.groups {
            if let pid = RingHost.otherHost(of: group) { throw RingError.appGroupHosted(appGroup: group.name, holder: RingError.Holder(pid: pid)) }
        }
        return claims
    }

    /// The files written all along: each share's recording and the trace.
    private struct Files {
        let recorders: [IVFWriter?]
        let trace: TraceFile?

        /// Appends every pending per-frame record as a JSON line (off the frame path).
        func drainTraces(of receivers: [ShareReceiver]) {
            guard let trace else { return }
            for receiver in receivers {
                receiver.trace?.drain { trace.append($0.jsonLine(share: receiver.appGroup.name)) }
            }
            trace.flush()
        }
    }

    /// Opens the files written all along, each locked: one another live host
    /// writes is refused before Janus or anything else is touched.
    private func openFiles() throws -> Files {
        let recorders = try configuration.shares.map { share in
            try share.encoding.flatMap { options in
                try options.recordPath.map { path throws(RecordingError) in try ShareRecording.open(path, frameRate: options.settings.frameRate) }
            }
        }
        return Files(recorders: recorders, trace: try configuration.tracePath.map { try TraceFile(path: $0) })
    }

    private func makeReceivers(mountpoints: [JanusMountpoint]) -> [ShareReceiver] {
        configuration.shares.indices.map { index in
            var options = configuration.options
            options.janus = mountpoints.indices.contains(index) ? mountpoints[index] : nil
            options.quiet = configuration.quiet
            return ShareReceiver(appGroup: configuration.shares[index].group, options: options, trace: configuration.tracePath != nil, log: log)
        }
    }

    /// Each share's RTP stream, to its destinations and its Janus mountpoint
    /// (nil for a share that sends none), and the SDP files.
    private func openStreams(mountpoints: [JanusMountpoint]) throws -> [RTPSession?] {
        try configuration.shares.indices.map { index in
            let share = configuration.shares[index]
            var options = share.streaming
            if mountpoints.indices.contains(index) {
                let mountpoint = mountpoints[index]
                let host = mountpoint.host.contains(":") ? "[\(mountpoint.host)]" : mountpoint.host
                let ports = try mountpoint.layerPorts.map { try Destination("\(host):\($0)").withRTCPPort(mountpoint.rtcpPort) }
                if ports.count > 1 { options.simulcast = ports } else { options.destinations += ports }
                say("\(share.group): Janus mountpoint \(mountpoint.id) on \(mountpoint.janus)" + (mountpoint.reclaimed ? " (taken back from an earlier host)" : "")
                    + ", RTP to port" + (ports.count > 1 ? "s \(mountpoint.layerPorts.map(String.init).joined(separator: ", ")) (a layer each)" : " \(mountpoint.rtpPort)")
                    + ", RTCP to \(mountpoint.rtcpPort)")
            }
            guard let encoding = share.encoding, !(options.destinations + options.simulcast).isEmpty else { return nil }
            // Each stream paced from its layer's bitrate (one stream: the whole picture's).
            let bitrates = encoding.layerBitrates
            options.bitratesKbps = options.simulcast.isEmpty ? [bitrates[bitrates.count - 1]] : bitrates
            let session = try RTPSession(options: options)
            if let path = share.sdpPath, let first = options.destinations.first { try OutputFile.write(SDP.vp8(ssrc: session.ssrc, destination: first), to: path) }
            let ssrcs = session.ssrcs.count > 1 ? "SSRCs \(session.ssrcs.map(String.init).joined(separator: ", ")) (a layer each)" : "SSRC \(session.ssrc)"
            say("\(share.group): RTP to " + (options.simulcast + options.destinations).map(\.description).joined(separator: ", ") + ", \(ssrcs), RTCP on port \(session.rtcpPort)")
            return session
        }
    }

    private func serveViewer(receivers: [ShareReceiver], broadcasts: [FrameBroadcast], mountpoints: [JanusMountpoint]) throws {
        guard let http = configuration.http else { return }
        let viewer = try ViewerServer(address: http.address, port: http.port, shares: zip(receivers, broadcasts).map { receiver, broadcast in
            ViewerServer.Share(appGroup: receiver.appGroup.name, broadcast: broadcast, keyframes: receiver.keyframes, stats: { receiver.snapshot })
        })
        viewer.start()
        log("viewer: \(viewer.url)   (ffplay \(viewer.url)stream.ivf)" + (viewer.listensEverywhere ? "   on every interface" : ""))
        for (index, mountpoint) in mountpoints.enumerated() {
            log("viewer over WebRTC through Janus: \(viewer.url)?mode=webrtc&share=\(index)   (mountpoint \(mountpoint.id))")
        }
    }

    private func startShares(receivers: [ShareReceiver], pipelines: [SharePipeline?]) throws -> ShareThreads {
        let threads = ShareThreads()
        for (index, receiver) in receivers.enumerated() {
            let share = ShareThread(receiver: receiver, pipeline: pipelines[index])
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
        say("waiting for frames on " + configuration.groups.map(\.name).joined(separator: ", "))
        return threads
    }

    /// The status line, the hints and the traces ten times a second, until a
    /// stop condition; true when a share's thread failed.
    private func watch(receivers: [ShareReceiver], threads: ShareThreads, files: Files, shouldStop: () -> Bool, onTick: ([ShareStats]) -> Void) -> Bool {
        let status = StatusLine(enabled: !configuration.quiet)
        defer { status.clear() }
        let start = MonotonicClock.now()
        var hints = HostHints()
        while true {
            MonotonicClock.sleep(nanoseconds: 100_000_000)
            let snapshots = receivers.map(\.snapshot)
            for line in hints.lines(for: snapshots, since: start, quiet: configuration.quiet) { log(line) }
            status.update(snapshots)
            files.drainTraces(of: receivers)
            onTick(snapshots)
            if threads.failure.withLock({ $0 }) != nil { return true }
            if shouldStop() { return false }
            if let duration = configuration.duration, Double(MonotonicClock.now() &- start) / 1e9 >= duration { return false }
            if let frames = configuration.frames, snapshots.allSatisfy({ $0.taken >= frames }) { return false }
            if configuration.exitWhenFinished, receivers.allSatisfy(\.producerFinished) { return false }
        }
    }

    /// The summary, what each recording holds, the report; the exit status:
    /// 1 for a share's failure, for what was asked and did not happen (quiet
    /// or not), and for fewer frames than `--expect-frames`.
    private func finish(_ finals: [ShareStats], failure: String?, streaming: [Bool]) throws -> Int32 {
        for share in finals {
            let whole = share.wholeRun
            say("summary: " + StatusLine.format(whole.stats, kbps: whole.kbps, summary: true))
        }
        // What each recording holds, however the run ended (Ctrl-C too): a stopped one is said below, as an error.
        for share in finals {
            guard let recording = share.recording, recording.stopped == nil, recording.frames > 0 else { continue }
            say("\(share.appGroup): recorded \(recording.frames) frames, \(fixed(recording.seconds, 1)) s, \(recording.bytes) bytes to \(recording.path)")
        }
        if let path = configuration.reportPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try OutputFile.write(String(decoding: try encoder.encode(finals.map(\.wholeRun.stats)), as: UTF8.self), to: path)
        }
        if let failure {
            log("error: \(failure)")
            return 1
        }
        let troubles = finals.indices.flatMap { index in Self.troubles(finals[index], streams: streaming[index]) }
        for line in troubles { log("error: " + line) }
        if !troubles.isEmpty { return 1 }
        if let expected = configuration.expectFrames, let short = finals.first(where: { $0.taken < expected }) {
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
