@preconcurrency import Glibc
import Synchronization
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayJanus

/// The host's loop for one App Group: follows the producer, takes each
/// newest frame and sends it down the share's ``SharePipeline``, reads the
/// keyframe requests, and keeps the share's statistics.
///
/// The frame loop allocates nothing and takes no lock per frame; it copies
/// its statistics into ``snapshot`` a few times a second.
public final class ShareReceiver: @unchecked Sendable {
    // @unchecked Sendable: `host` and the loop state are touched only by the
    // thread running `run`; other threads read `published` under its lock and
    // ask for keyframes through `keyframes`.
    public let appGroup: AppGroup
    private let host: RingHost
    private var stats: ShareStats
    private var latency = ShareLatency()
    private let published: Locked<ShareStats>
    private let log: @Sendable (String) -> Void
    private var lastGeometry: (Int, Int, PixelFormat, Orientation)?
    private var frameRate = FrameRateWindow(now: MonotonicClock.now())
    private var awaitingFirstFrame = false
    private var recentWindowStart = MonotonicClock.now()
    private var pipeline: SharePipeline?
    /// Keyframes asked for (PLI or FIR from a receiver, a viewer joining) and not yet made.
    public let keyframes = KeyframeRequests()

    /// Options for what the host does beyond taking frames.
    public struct Options: Sendable {
        public var verifyChecksums = false
        /// Simulated work per frame (ns): a slow consumer for tests.
        public var workNanoseconds: UInt64 = 0
        /// Ask the producer to stop after this many frames.
        public var stopAfter: UInt64?
        /// Ask the producer for at most this frame rate.
        public var maxFrameRate: Int?
        /// The Janus mountpoint the share streams into, for its statistics.
        public var janus: JanusMountpoint?
        /// No progress lines (what went wrong is still said).
        public var quiet = false
        public init() {}
    }

    private let options: Options
    /// Per-frame stage times, for `--trace`; nil when nobody reads them.
    public let trace: FrameTraceRing?

    public init(appGroup: AppGroup, options: Options, trace: Bool = false, log: @escaping @Sendable (String) -> Void) {
        self.appGroup = appGroup
        self.options = options
        self.trace = trace ? FrameTraceRing() : nil
        self.host = RingHost(appGroup: appGroup, verifyChecksums: options.verifyChecksums)
        self.stats = ShareStats(appGroup: appGroup.name)
        stats.janus = options.janus
        self.published = Locked(stats)
        self.log = log
    }

    /// The statistics as of the last publish (a few times a second).
    public var snapshot: ShareStats { published.withLock { $0 } }

    /// Whether the producer finished its broadcast (and no new one attached since).
    public private(set) var producerFinished = false
    /// When (CLOCK_MONOTONIC ns) the producer last finished, died or lost its ring, until one attaches again: where its share ended.
    private var producerEndedAt: UInt64?
    /// Whether the recording's stop has been said (once).
    private var recordingStopReported = false

    /// Runs until `shouldStop` returns true, sending each frame down `pipeline`.
    public func run(shouldStop: () -> Bool, pipeline: SharePipeline? = nil) throws {
        self.pipeline = pipeline
        // With a stream to serve, wake often enough to answer RTCP between frames.
        let idleTimeout: UInt64 = pipeline?.hasLiveOutputs == true ? 10_000_000 : 100_000_000
        defer {
            host.detach()
            pipeline?.finish(endedAt: producerEndedAt ?? MonotonicClock.now())
            pipeline?.finishedTimings(waiting: false, recordTiming)
            publish()
        }
        var lastPublish = MonotonicClock.now()
        while !shouldStop() {
            let event = try host.next(timeoutNanoseconds: idleTimeout)
            let polled = MonotonicClock.now()
            if let streams = pipeline?.pollOutputs(now: polled), !streams.isEmpty { keyframes.ask(.receiver, on: streams) }
            if let (reasons, streams) = keyframes.take(now: polled) {
                pipeline?.requestKeyframe(on: streams)
                if reasons.contains(.receiver) { record("keyframe-request", "PLI or FIR from a receiver") }
            }
            switch event {
            case .frame(let view):
                var frame = HostFrame(view, taken: MonotonicClock.now())
                stats.taken += 1
                if options.verifyChecksums, frame.metadata.checksum != 0 { stats.checksumsVerified += 1 }
                noteGeometry(frame.metadata)
                if stats.firstCaptured == 0 { stats.firstCaptured = frame.timing.captured }
                // A frame captured well before this host attached (the last of a producer that is gone) is
                // streamed, but its age is the ring's, not the pipeline's: it stays out of the latency figures and the frame rate.
                let stale = isStale(frame.timing)
                if !stale { frameRate.took(captured: frame.timing.captured, taken: frame.timing.taken) }
                if awaitingFirstFrame {
                    awaitingFirstFrame = false
                    record("first-frame", "frame \(frame.metadata.frameNumber)")
                }
                if stale, !options.quiet {
                    log("\(appGroup): frame \(frame.metadata.frameNumber) was captured \(fixed(Double(attachedAt &- frame.timing.captured) / 1e9, 1)) s before this host attached: stale, left out of the latency figures")
                }
                do {
                    if let pipeline {
                        try pipeline.process(&frame)
                        pipeline.finishedTimings(recordTiming)
                    } else {
                        recordTiming(frame.timing)
                    }
                    if !recordingStopReported, let recording = pipeline?.recording, let reason = recording.stopped {
                        recordingStopReported = true
                        record("recording-stopped", "\(recording.path) after \(recording.frames) frames: \(reason); the share and its other outputs go on")
                    }
                } catch let invalid as InvalidFrame {
                    // One bad frame: counted and skipped; the share goes on, and so do the others.
                    frame.timing.encoded = 0
                    latency.record(frame.timing)
                    noteInvalid(invalid)
                }
                if options.workNanoseconds > 0 { MonotonicClock.sleep(nanoseconds: options.workNanoseconds) }
                if let limit = options.stopAfter, stats.taken >= limit { host.requestStop() }
            case .invalidFrame(let reason):
                noteInvalid(reason)
            case .attached(let pid, let setupInfo, let createdAt):
                previousAttachedAt = attachedAt
                attachedAt = MonotonicClock.now()
                stats.earlierRings.add(stats.ring)
                stats.ring = RingCounters()
                stats.producerAttaches += 1
                producerFinished = false
                stats.producerFinished = false
                stats.producerPaused = false
                stats.producerGone = false
                producerEndedAt = nil
                awaitingFirstFrame = true
                if let rate = options.maxFrameRate { host.requestMaxFrameRate(rate) }
                record("attached", "producer \(pid)" + (setupInfo.isEmpty ? "" : " setup \(PeerText.quoted(setupInfo))"), time: createdAt)
            case .lifecycle(let state):
                stats.producerPaused = state == .paused
                if state == .finished {
                    producerEndedAt = polled
                    producerFinished = true
                    stats.producerFinished = true
                    stats.ring = host.counters
                }
                record(state.description, "")
            case .producerDied(let pid):
                stats.producerDeaths += 1
                stats.producerGone = true
                stats.producerPaused = false
                stats.ring = host.counters
                producerEndedAt = producerEndedAt ?? polled
                record("died", "producer \(pid) is gone; waiting for a new producer")
            case .ringLost(let reason):
                stats.ringsLost += 1
                stats.ring = host.counters
                producerEndedAt = producerEndedAt ?? polled
                record("ring-lost", reason + "; waiting for the producer's next ring")
            case .refused(let error):
                record("refused", "\(error); waiting for a ring this host can read")
            case .idle:
                // A change held back from a base temporal layer waits for no frame that may never come.
                do { try pipeline?.flushHeldBack(now: polled) } catch let invalid as InvalidFrame { noteInvalid(invalid) }
            }
            // Frames whose last packet left the pacer since.
            pipeline?.finishedTimings(recordTiming)
            let now = MonotonicClock.now()
            if now &- lastPublish >= 250_000_000 {
                lastPublish = now
                publish()
            }
        }
    }

    /// How much older than the attach a frame is to be stale.
    static let staleAge: UInt64 = 1_000_000_000
    /// When this host last attached to a ring, and the time before.
    private var attachedAt: UInt64 = 0
    private var previousAttachedAt: UInt64 = 0

    /// Whether a frame was captured well before this host attached to the
    /// ring it came from (the last of a producer that is gone): it is
    /// streamed, but its age is the ring's, not the pipeline's.
    private func isStale(_ timing: FrameTiming) -> Bool {
        timing.captured &+ Self.staleAge < (timing.taken >= attachedAt ? attachedAt : previousAttachedAt)
    }

    /// Records a frame's stage times once every output has timed it: in the latency figures unless stale, and in the trace.
    private func recordTiming(_ timing: FrameTiming) {
        if !isStale(timing), !timing.heldBack { latency.record(timing) }
        trace?.push(timing)
    }

    private func noteInvalid(_ reason: InvalidFrame) {
        stats.invalid += 1
        if case .checksumMismatch = reason { stats.checksumFailures += 1 }
        if stats.invalid <= 5 { log("\(appGroup): skipped invalid frame: \(reason)") }
    }

    /// The events that say something went wrong: said even when quiet.
    private static let troubles: Set<String> = ["refused", "ring-lost", "recording-stopped"]

    private func record(_ kind: String, _ detail: String, time: UInt64? = nil) {
        let now = MonotonicClock.now()
        stats.appendEvent(ShareEvent(time: now, kind: kind, detail: detail))
        if kind == "attached", let time { stats.appendEvent(ShareEvent(time: time, kind: "ring-created", detail: "")) }
        if !options.quiet || Self.troubles.contains(kind) { log("\(appGroup): \(kind)" + (detail.isEmpty ? "" : " (\(detail))")) }
        publish()
    }

    private func noteGeometry(_ m: FrameMetadata) {
        if let last = lastGeometry, last == (m.width, m.height, m.format, m.orientation) { return }
        lastGeometry = (m.width, m.height, m.format, m.orientation)
        stats.geometryChanges += 1
        stats.geometries.append("\(m.width)x\(m.height) \(m.format) \(m.orientation) from frame \(m.frameNumber)")
        if stats.geometries.count > ShareStats.historyLimit { stats.geometries.removeFirst() }
    }

    private func publish() {
        let now = MonotonicClock.now()
        stats.fps = frameRate.rate(now: now) ?? 0
        (stats.framesTimed, stats.secondsTimed) = frameRate.timed(now: now)
        stats.ring = host.counters
        stats.cpuSeconds = Double(Processor.threadCPUNanoseconds()) / 1e9
        pipeline?.report(into: &stats)
        latency.fill(&stats)
        stats.publishedAt = now
        if now &- recentWindowStart >= 1_000_000_000, pipeline != nil {
            recentWindowStart = now
            stats.recentCaptureToEncoded = latency.takeRecentCaptureToEncoded()
        }
        let copy = stats
        published.withLock { $0 = copy }
    }
}

extension RingCounters {
    /// Adds another ring's counters. They come from shared memory, which
    /// anyone with the App Group may write: the sums saturate, never trap.
    mutating func add(_ other: RingCounters) {
        written = written.saturatingAdd(other.written)
        dropped = dropped.saturatingAdd(other.dropped)
        taken = taken.saturatingAdd(other.taken)
        invalid = invalid.saturatingAdd(other.invalid)
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` where that would overflow.
    func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
