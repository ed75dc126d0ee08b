/// Which layer a viewer of a simulcast mountpoint watches, from what it
/// measures of its own link: it starts on the smallest layer at its full
/// rate, so the first picture comes fast; it steps down one rung within
/// ``evaluateEvery`` + ``switchGap`` of trouble; it steps up one rung once
/// the link has held the current rung for ``firstHold`` with no trouble.
///
/// The rungs, from the bottom: each simulcast substream at its base
/// temporal layer (half the frame rate), then at both. Trouble in a window
/// of ``evaluateEvery`` is any of: more than ``lossLimit`` of the packets
/// expected lost after repair (NACK); a queueing delay over ``delayLimit``
/// (a frame's arrival against its RTP timestamp, above the least of the
/// last ``floorSeconds`` s; the window's mean, so a keyframe's burst that
/// drains passes and a queue that grows does not); a frame missed (lost,
/// or waiting for a keyframe); no frame for ``silenceLimit``. A step up
/// that meets trouble within ``recentUp`` doubles the hold before the next
/// (up to ``longestHold``), so a link at the edge of a rung does not swing;
/// a step down otherwise resets it.
///
/// The viewer page's JavaScript (`LayerRule` in `layer-rule.js`) mirrors
/// this type line for line; `LayerRuleTests` holds both to the same
/// sequences. Times are in ms, as the page's are.
struct LayerRule {
    struct Layer: Equatable, Codable, Sendable, CustomStringConvertible {
        var substream: Int
        var temporal: Int
        var description: String { "\(substream)/\(temporal)" }
    }

    static let evaluateEvery = 500.0
    static let lossLimit = 0.02
    static let delayLimit = 150.0
    static let floorSeconds = 10
    static let silenceLimit = 2000.0
    /// The least time between two steps down: a switch waits for a keyframe on the new substream.
    static let switchGap = 1000.0
    static let firstHold = 5000.0
    static let longestHold = 40_000.0
    static let recentUp = 10_000.0

    let ladder: [Layer]
    private(set) var rung: Int
    var layer: Layer { ladder[rung] }
    private var hold = Self.firstHold
    private var lastSwitch: Double
    private var lastUp = -Double.infinity
    private var lastTrouble: Double
    private var nextEvaluation: Double
    private var lastExpected: UInt64 = 0
    private var lastLost: UInt64 = 0
    private var missing = 0
    /// The RTP time of the frames so far, unwrapped (ms from the first), and the last timestamp.
    private var rtpTime = 0.0
    private var lastTimestamp: UInt32?
    /// The least delay in each second of the last ``floorSeconds`` with a frame.
    private var floors: [(second: Int, delay: Double)] = []
    private var delaySum = 0.0
    private var delayCount = 0
    private var lastFrame: Double

    /// A viewer of a mountpoint with `layers` simulcast layers (each with
    /// two temporal layers) that joins at `now`.
    init(layers: Int, now: Double) {
        ladder = (0..<layers).flatMap { [Layer(substream: $0, temporal: 0), Layer(substream: $0, temporal: 1)] }
        rung = 1
        lastSwitch = now
        lastTrouble = now
        nextEvaluation = now + Self.evaluateEvery
        lastFrame = now
    }

    /// A frame received whole at `now` with RTP timestamp `timestamp`.
    mutating func frame(at now: Double, timestamp: UInt32) {
        if let lastTimestamp { rtpTime += Double(Int32(bitPattern: timestamp &- lastTimestamp)) / 90 }
        lastTimestamp = timestamp
        let delay = now - rtpTime
        let second = Int((now / 1000).rounded(.down))
        if let last = floors.last, last.second == second {
            floors[floors.count - 1].delay = min(last.delay, delay)
        } else {
            floors.append((second, delay))
            floors.removeAll { $0.second <= second - Self.floorSeconds }
        }
        delaySum += delay - floors.map(\.delay).min()!
        delayCount += 1
        lastFrame = now
    }

    /// Frames missed: lost for good, or not shown for want of a keyframe.
    mutating func missed(_ frames: Int) { missing += frames }

    /// At `now`, with the packets expected and lost after repair so far:
    /// the rung to move to, when it changes (evaluated every ``evaluateEvery``).
    mutating func tick(now: Double, expected: UInt64, lost: UInt64) -> Layer? {
        guard now >= nextEvaluation else { return nil }
        nextEvaluation = now + Self.evaluateEvery
        let expectedNow = expected >= lastExpected ? expected - lastExpected : 0
        let lostNow = lost >= lastLost ? lost - lastLost : 0
        (lastExpected, lastLost) = (expected, lost)
        let loss = expectedNow > 0 ? Double(lostNow) / Double(expectedNow) : 0
        let delay = delayCount > 0 ? delaySum / Double(delayCount) : 0
        let trouble = loss > Self.lossLimit || delay > Self.delayLimit || missing > 0 || now - lastFrame > Self.silenceLimit
        (delaySum, delayCount, missing) = (0, 0, 0)
        if trouble {
            lastTrouble = now
            guard rung > 0, now - lastSwitch >= Self.switchGap else { return nil }
            hold = now - lastUp < Self.recentUp ? min(Self.longestHold, hold * 2) : Self.firstHold
            rung -= 1
            lastSwitch = now
            return layer
        }
        guard rung < ladder.count - 1, now - lastTrouble >= hold, now - lastSwitch >= hold else { return nil }
        rung += 1
        lastSwitch = now
        lastUp = now
        return layer
    }
}
