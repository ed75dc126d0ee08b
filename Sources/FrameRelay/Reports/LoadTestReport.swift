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
        public init(maxDropPercent: Double, maxP99Milliseconds: Double, warmUpSeconds: Double = 0) {
            self.maxDropPercent = maxDropPercent
            self.maxP99Milliseconds = maxP99Milliseconds
            self.warmUpSeconds = warmUpSeconds
        }
    }

    /// A share past its warm-up: what the objective judges.
    public struct Steady: Codable, Sendable {
        public var framesIn: UInt64
        public var dropPercent: Double
        /// Capture → encoded p99 of the frames after the warm-up, from the
        /// distribution's ranges (within a fifth of its value).
        public var p99Milliseconds: Double

        public init(framesIn: UInt64, dropPercent: Double, p99Milliseconds: Double) {
            self.framesIn = framesIn
            self.dropPercent = dropPercent
            self.p99Milliseconds = p99Milliseconds
        }
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

    /// What one share's WebRTC viewers got: each viewer's frames decoded,
    /// the frames missing between the first and last stamp each saw (the
    /// worst viewer's share of them), time to first picture (the slowest
    /// viewer), and glass to glass (capture → decoded) over all their frames.
    public struct Viewers: Codable, Sendable {
        public var count: Int
        public var framesDecoded: [Int]
        public var lostPercent: Double
        public var firstPictureMilliseconds: Double
        public var glassToGlassP50Milliseconds: Double
        public var glassToGlassP99Milliseconds: Double

        public init(count: Int, framesDecoded: [Int], lostPercent: Double, firstPictureMilliseconds: Double, glassToGlassP50Milliseconds: Double, glassToGlassP99Milliseconds: Double) {
            self.count = count
            self.framesDecoded = framesDecoded
            self.lostPercent = lostPercent
            self.firstPictureMilliseconds = firstPictureMilliseconds
            self.glassToGlassP50Milliseconds = glassToGlassP50Milliseconds
            self.glassToGlassP99Milliseconds = glassToGlassP99Milliseconds
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
        /// Captured → encoded over every share (µs ranges).
        public var latency: [LatencyBin] { LatencyBin.merged(shares.map(\.latency)) }
        /// After the warm-up: the worst share's p99 and the drops over every share (nil: no share got past it).
        public var steadyP99Milliseconds: Double? { shares.compactMap(\.steady?.p99Milliseconds).max() }
        public var steadyDropPercent: Double? {
            let steady = shares.compactMap(\.steady)
            let written = steady.map { Double($0.framesIn) }.reduce(0, +)
            return steady.isEmpty ? nil : written == 0 ? 100 : steady.map { Double($0.framesIn) * $0.dropPercent }.reduce(0, +) / written
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
    public var cores: Int
    /// Host processes the shares were dealt to.
    public var hosts: Int
    public var objective: Objective
    public var steps: [Step] = []
    /// The most shares that held the objective (0 if none did).
    public var maxSessionsHeld: Int = 0

    public init(size: String, framesPerSecond: Int, format: String, cores: Int, hosts: Int = 1, objective: Objective) {
        self.size = size
        self.framesPerSecond = framesPerSecond
        self.format = format
        self.cores = cores
        self.hosts = hosts
        self.objective = objective
    }

    /// Whether a step's every share kept drops and p99 within the objective,
    /// and, where it has WebRTC viewers, so did what they saw (loss, glass to glass p99).
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
            if dropPercent >= drops { lines.append("\(name): drops\(after) \(fixed(dropPercent, 2)) %, limit < \(fixed(drops, 2)) %") }
            if p99Milliseconds >= p99 { lines.append("\(name): capture→encoded p99\(after) \(fixed(p99Milliseconds, 1)) ms, limit < \(fixed(p99, 1)) ms") }
            guard let viewers = share.viewers else { continue }
            if viewers.lostPercent >= drops { lines.append("\(name): WebRTC viewers lost \(fixed(viewers.lostPercent, 2)) %, limit < \(fixed(drops, 2)) %") }
            if viewers.glassToGlassP99Milliseconds >= p99 {
                lines.append("\(name): WebRTC glass-to-glass p99 \(fixed(viewers.glassToGlassP99Milliseconds, 1)) ms, limit < \(fixed(p99, 1)) ms")
            }
            if !viewers.framesDecoded.allSatisfy({ $0 > 0 }) { lines.append("\(name): a WebRTC viewer decoded no frame") }
        }
        return lines
    }
}
