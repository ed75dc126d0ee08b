import FrameRelaySystem
/// The outcome of a load test: one or more steps (numbers of concurrent
/// shares), each with per-share and total figures and a timeline, and the
/// largest number of shares that held the objective.
public struct LoadTestReport: Codable, Sendable {
    public struct Objective: Codable, Sendable {
        public var maxDropPercent: Double
        public var maxP99Milliseconds: Double
        /// Each share's first seconds, left out of what the objective judges:
        /// its first keyframe, and the whole picture refining after it.
        public var warmUpSeconds: Double
        /// What each group of WebRTC viewers must keep: packets lost for good
        /// (after NACK) and capture → decodable p99 at the viewers.
        public var maxViewerLossPercent: Double
        public var maxViewerP99Milliseconds: Double

        public init(maxDropPercent: Double, maxP99Milliseconds: Double, warmUpSeconds: Double = 0, maxViewerLossPercent: Double = 1, maxViewerP99Milliseconds: Double = 150) {
            self.maxDropPercent = maxDropPercent
            self.maxP99Milliseconds = maxP99Milliseconds
            self.warmUpSeconds = warmUpSeconds
            self.maxViewerLossPercent = maxViewerLossPercent
            self.maxViewerP99Milliseconds = maxViewerP99Milliseconds
        }
    }

    /// A share past its warm-up: what the objective judges.
    public struct Steady: Codable, Sendable {
        public var framesIn: UInt64
        public var dropPercent: Double
        /// Capture → encoded p50 and p99 of the frames after the warm-up, from
        /// the distribution's ranges (within a sixteenth of its value).
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        /// How long after the warm-up the share was measured (s).
        public var seconds: Double

        public init(framesIn: UInt64, dropPercent: Double, p50Milliseconds: Double, p99Milliseconds: Double, seconds: Double) {
            (self.framesIn, self.dropPercent, self.seconds) = (framesIn, dropPercent, seconds)
            (self.p50Milliseconds, self.p99Milliseconds) = (p50Milliseconds, p99Milliseconds)
        }

        /// The frames the producer sent a second after the warm-up.
        public var framesPerSecond: Double { seconds > 0 ? Double(framesIn) / seconds : 0 }
    }

    public struct Share: Codable, Sendable {
        public var appGroup: String
        public var framesIn: UInt64
        public var framesOut: UInt64
        /// Frames not encoded because nothing changed (zero-hertz): delivered, not dropped.
        public var framesSkipped: UInt64
        public var dropPercent: Double
        /// Frames handled per second (encoded or skipped as unchanged).
        public var fps: Double
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        public var hostCPUPercent: Double
        public var producerCPUPercent: Double
        /// Captured → encoded, the whole distribution (µs ranges).
        public var latency: [LatencyBin]
        /// What the share's WebRTC viewers got through Janus (`--janus`, `--viewers`).
        public var viewers: Viewers?
        /// Seconds after the step's first share that this one's producer
        /// started: the shares start spread over a second, as users do.
        public var startedAfter: Double
        /// After the objective's warm-up (nil: no warm-up, or the share never got past it).
        public var steady: Steady?
        /// The frames its producer sent a second, from its first to the step's
        /// end (nil: not known, no frame taken); and what was seen of why it
        /// sent too few (its process was stopped).
        public var producerFramesPerSecond: Double?
        public var producerNote: String?
        /// What the host sent on each simulcast layer, smallest first (one with `--layers 1`; nil: nothing encoded): what a viewer's kbit/s is checked against.
        public var layersSent: [LayerSent]?

        public init(appGroup: String, framesIn: UInt64, framesOut: UInt64, framesSkipped: UInt64 = 0, dropPercent: Double, fps: Double, p50Milliseconds: Double, p99Milliseconds: Double, hostCPUPercent: Double, producerCPUPercent: Double, latency: [LatencyBin], viewers: Viewers? = nil, startedAfter: Double = 0, steady: Steady? = nil) {
            self.viewers = viewers
            self.startedAfter = startedAfter
            self.steady = steady
            self.appGroup = appGroup
            self.framesIn = framesIn
            self.framesOut = framesOut
            self.framesSkipped = framesSkipped
            self.dropPercent = dropPercent
            self.fps = fps
            self.p50Milliseconds = p50Milliseconds
            self.p99Milliseconds = p99Milliseconds
            self.hostCPUPercent = hostCPUPercent
            self.producerCPUPercent = producerCPUPercent
            self.latency = latency
        }
    }

    /// What one share's WebRTC viewers got through Janus: each viewer's
    /// frames (decodable for our subscriber, decoded for aiortc), the worst
    /// group's loss, the slowest first picture, latency (capture → decodable
    /// or decoded, from the hosts' traces) over every viewer's frames, and
    /// each link group's figures.
    public struct Viewers: Codable, Sendable {
        /// "native" (`frame-relay subscribe`: WebRTC without decoding, one in K
        /// decoding to check pictures) or "aiortc" (each viewer decodes, in Python).
        public var kind: String
        public var count: Int
        public var framesDecoded: [Int]
        public var lostPercent: Double
        public var firstPictureMilliseconds: Double
        public var glassToGlassP50Milliseconds: Double
        public var glassToGlassP99Milliseconds: Double
        public var groups: [ViewerGroup]

        public init(kind: String, count: Int, framesDecoded: [Int], lostPercent: Double, firstPictureMilliseconds: Double,
                    glassToGlassP50Milliseconds: Double, glassToGlassP99Milliseconds: Double, groups: [ViewerGroup]) {
            self.kind = kind
            self.count = count
            self.framesDecoded = framesDecoded
            self.lostPercent = lostPercent
            self.firstPictureMilliseconds = firstPictureMilliseconds
            self.glassToGlassP50Milliseconds = glassToGlassP50Milliseconds
            self.glassToGlassP99Milliseconds = glassToGlassP99Milliseconds
            self.groups = groups
        }
    }

    /// One share's viewers on one link: how many kept watching, packets lost
    /// for good, what NACK and PLIs did, keyframe waits and freezes, latency
    /// and first picture (times in ms).
    public struct ViewerGroup: Codable, Sendable {
        public var link: String
        public var viewers: Int
        public var watching: Int
        public var lossPercent: Double
        public var recoveredPackets: UInt64
        public var plisSent: UInt64
        public var keyframeWaits: UInt64
        public var keyframeWaitMs: Double
        public var freezes: UInt64
        public var freezesPerMinute: Double
        public var p50Ms: Double?
        public var p99Ms: Double?
        public var firstFrameMaxMs: Double?
        /// Pictures the sampled decoders checked against the host's frame, and those that were wrong.
        public var picturesChecked: UInt64
        public var picturesWrong: UInt64
        /// Pictures not checked: on a layer too small for the stamp to be read (the smallest of three at 720p).
        public var picturesTooSmall: UInt64 = 0
        /// Why viewers failed, when they did.
        public var error: String?
        /// Per viewer, decodable frames a second and kilobits a second received.
        public var framesPerSecond = 0.0
        public var kbitPerSecond = 0.0
        /// On a simulcast mountpoint: the share of the viewers' time at each layer ("substream/temporal": %), and the switches they made.
        public var layerPercent: [String: Double] = [:]
        public var layerSwitches: UInt64 = 0
        /// Each second from when the viewers began to watch: their mean
        /// decodable frames, their mean packets lost after repair (in the
        /// second each went missing), and (on a simulcast mountpoint) their
        /// mean layer as substream + temporal / 2 (0, 0.5, 1, 1.5 for two layers).
        public var framesEachSecond: [Double] = []
        public var lostEachSecond: [Double] = []
        public var layerEachSecond: [Double] = []

        /// Freezes a minute ("2.1"), or "no picture shown": a freeze is a
        /// wait between two pictures shown, so a group shown none had no
        /// chance to freeze, and 0.0 would read as a smooth picture.
        public var freezesText: String { framesPerSecond > 0 ? fixed(freezesPerMinute, 1) : "no picture shown" }

        /// The time at each layer in one phrase: "0/1 20 %, 1/1 80 %, 3 switches" (empty without layers).
        public var layersText: String {
            layerPercent.isEmpty ? "" : layerPercent.keys.sorted().map { "\($0) \(fixed(layerPercent[$0]!, 0)) %" }.joined(separator: ", ") + ", \(layerSwitches) switches"
        }

        public init(link: String, viewers: Int, watching: Int, lossPercent: Double, recoveredPackets: UInt64 = 0, plisSent: UInt64 = 0, keyframeWaits: UInt64 = 0,
                    keyframeWaitMs: Double = 0, freezes: UInt64 = 0, freezesPerMinute: Double = 0, p50Ms: Double?, p99Ms: Double?, firstFrameMaxMs: Double?,
                    picturesChecked: UInt64 = 0, picturesWrong: UInt64 = 0, error: String? = nil) {
            self.link = link
            self.viewers = viewers
            self.watching = watching
            self.lossPercent = lossPercent
            self.recoveredPackets = recoveredPackets
            self.plisSent = plisSent
            self.keyframeWaits = keyframeWaits
            self.keyframeWaitMs = keyframeWaitMs
            self.freezes = freezes
            self.freezesPerMinute = freezesPerMinute
            self.p50Ms = p50Ms
            self.p99Ms = p99Ms
            self.firstFrameMaxMs = firstFrameMaxMs
            self.picturesChecked = picturesChecked
            self.picturesWrong = picturesWrong
            self.error = error
        }
    }

    /// One sample a second: elapsed seconds, then per share fps and p99
    /// (ms; nil while a share has encoded nothing in the last second, so
    /// that no false 0 ms starts its line).
    public struct Sample: Codable, Sendable {
        public var seconds: Double
        public var fps: [Double]
        public var p99Milliseconds: [Double?]

        public init(seconds: Double, fps: [Double], p99Milliseconds: [Double?]) {
            self.seconds = seconds
            self.fps = fps
            self.p99Milliseconds = p99Milliseconds
        }
    }

    /// One simulcast layer of a share, as its host sent it over the step.
    public struct LayerSent: Codable, Sendable, Equatable {
        /// Janus's substream: 0 is the smallest.
        public var stream: Int
        public var width: Int
        public var height: Int
        /// The layer's target (the mountpoint's description says it to the viewers).
        public var targetKbps: Int
        /// Its encoded bytes over the share's time in the step.
        public var sentKbps: Double

        public init(stream: Int, width: Int, height: Int, targetKbps: Int, sentKbps: Double) {
            (self.stream, self.width, self.height, self.targetKbps, self.sentKbps) = (stream, width, height, targetKbps, sentKbps)
        }
    }

    public struct Step: Codable, Sendable {
        public var sessions: Int
        public var seconds: Double
        public var passed: Bool
        public var shares: [Share]
        public var framesIn: UInt64
        public var framesOut: UInt64
        public var dropPercent: Double
        public var fps: Double
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        public var hostCPUPercent: Double
        /// The producers' CPU, all together (% of one core).
        public var producerCPUPercent: Double { shares.map(\.producerCPUPercent).reduce(0, +) }
        public var timeline: [Sample]
        /// Each share that missed the objective, and which limit: why a step failed when its totals look fine.
        public var failures: [String] = []
        /// It was cut short by a signal (Ctrl-C): its figures are what it measured, and it is not judged.
        public var interrupted = false
        /// Captured → encoded over every share (µs ranges).
        public var latency: [LatencyBin] { LatencyBin.merged(shares.map(\.latency)) }
        /// WebRTC viewers per share through Janus (nil: none watched).
        public var viewersPerShare: Int?
        /// CPU after the warm-up (% of one core): Janus's (nil when it does not run
        /// on this machine) and the viewers' process; and which process bounded the step.
        public var janusCPUPercent: Double?
        public var viewersCPUPercent: Double?
        public var bound: String?
        /// After the warm-up: the worst share's p99 and the drops over every share (nil: no share got past it).
        public var steadyP99Milliseconds: Double? { shares.compactMap(\.steady?.p99Milliseconds).max() }
        public var steadyDropPercent: Double? {
            let steady = shares.compactMap(\.steady)
            let written = steady.map { Double($0.framesIn) }.reduce(0, +)
            return steady.isEmpty ? nil : written == 0 ? 0 : steady.map { Double($0.framesIn) * $0.dropPercent }.reduce(0, +) / written
        }

        public init(sessions: Int, seconds: Double, passed: Bool, shares: [Share], framesIn: UInt64, framesOut: UInt64, dropPercent: Double, fps: Double, p50Milliseconds: Double, p99Milliseconds: Double, hostCPUPercent: Double, timeline: [Sample]) {
            self.sessions = sessions
            self.seconds = seconds
            self.passed = passed
            self.shares = shares
            self.framesIn = framesIn
            self.framesOut = framesOut
            self.dropPercent = dropPercent
            self.fps = fps
            self.p50Milliseconds = p50Milliseconds
            self.p99Milliseconds = p99Milliseconds
            self.hostCPUPercent = hostCPUPercent
            self.timeline = timeline
        }
    }

    public var size: String
    public var framesPerSecond: Int
    public var format: String
    /// What the shares were asked to send: the top's bitrate (kbit/s), the
    /// simulcast layers (nil: the host's default) and the producers' content.
    public var bitrateKbps: Int?
    public var layers: Int?
    public var content: String?
    public var cores: Int
    /// Host processes the shares were dealt to.
    public var hosts: Int
    public var objective: Objective
    public var steps: [Step] = []
    /// The most shares that held the objective (0 if none did).
    public var maxSessionsHeld: Int = 0
    /// With `--ramp-viewers`: the most viewers per share that held it at the shares given.
    public var maxViewersHeld: Int?

    public init(size: String, framesPerSecond: Int, format: String, cores: Int, hosts: Int = 1, objective: Objective) {
        self.size = size
        self.framesPerSecond = framesPerSecond
        self.format = format
        self.cores = cores
        self.hosts = hosts
        self.objective = objective
    }

    /// The least share of its frame rate a producer must send, after the
    /// warm-up: a share whose producer fell behind (a stopped or starved
    /// process) did not hold, however few frames it dropped.
    public static let minimumProducerRate = 0.9

    /// Whether a step's every share kept drops and p99 within the objective,
    /// its producer sent at its frame rate, and, where it has WebRTC viewers,
    /// so did what they saw (loss, glass to glass p99).
    public func holds(_ shares: [Share]) -> Bool { !shares.isEmpty && failures(shares).isEmpty }

    /// One line per limit a share missed, naming the share (its number and
    /// App Group), the figure and the limit.
    public func failures(_ shares: [Share]) -> [String] {
        let drops = objective.maxDropPercent, p99 = objective.maxP99Milliseconds
        var lines: [String] = []
        for (index, share) in shares.enumerated() {
            let name = "share \(index + 1) (\(share.appGroup))"
            // Past the warm-up when there is one; a share that never got past it is judged on all its frames.
            let after = share.steady == nil ? "" : " after the \(fixed(objective.warmUpSeconds, 1)) s warm-up"
            let dropPercent = share.steady?.dropPercent ?? share.dropPercent, p99Milliseconds = share.steady?.p99Milliseconds ?? share.p99Milliseconds
            // A share whose host encoded nothing has no drops and no latency to miss a limit by: it did not hold.
            if share.framesOut == 0 { lines.append("\(name): its host encoded no frame (\(share.framesIn) taken)") }
            if dropPercent >= drops { lines.append("\(name): drops\(after) \(fixed(dropPercent, 2)) %, limit < \(fixed(drops, 2)) %") }
            if p99Milliseconds >= p99 { lines.append("\(name): capture→encoded p99\(after) \(fixed(p99Milliseconds, 1)) ms, limit < \(fixed(p99, 1)) ms") }
            let least = Self.minimumProducerRate * Double(framesPerSecond)
            if let rate = share.steady?.framesPerSecond ?? share.producerFramesPerSecond, rate < least {
                lines.append("\(name): its producer sent \(fixed(rate, 1)) of \(framesPerSecond) frames/s\(after), limit ≥ \(fixed(least, 1))" + (share.producerNote.map { " (\($0))" } ?? ""))
            }
            guard let viewers = share.viewers else { continue }
            let loss = objective.maxViewerLossPercent, viewerP99 = objective.maxViewerP99Milliseconds
            for group in viewers.groups {
                let who = viewers.groups.count > 1 ? "viewers on the \(group.link) link" : "WebRTC viewers"
                if let error = group.error { lines.append("\(name): \(who): \(error)") }
                if group.watching < group.viewers { lines.append("\(name): \(who): \(group.watching) of \(group.viewers) watched to the end") }
                if group.lossPercent >= loss { lines.append("\(name): \(who) lost \(fixed(group.lossPercent, 2)) % for good, limit < \(fixed(loss, 2)) %") }
                if let p99 = group.p99Ms, p99 >= viewerP99 { lines.append("\(name): \(who): capture→viewer p99 \(fixed(p99, 1)) ms, limit < \(fixed(viewerP99, 1)) ms") }
            }
            if !viewers.framesDecoded.allSatisfy({ $0 > 0 }) { lines.append("\(name): a WebRTC viewer got no frame") }
        }
        return lines
    }
}
