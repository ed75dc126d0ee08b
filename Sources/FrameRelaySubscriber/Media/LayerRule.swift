/// Which layer a viewer of a simulcast mountpoint watches, from what it
/// measures of its own link: it starts on the smallest layer at its full
/// rate, so the first picture comes fast; it steps down within
/// ``evaluateEvery`` + ``switchGap`` of trouble, one rung or, when the
/// mountpoint says its layers' bitrates, to the highest rung below whose
/// bitrate ``headroom`` times over what the link brought in the window
/// (a link that falls from 5 Mbit/s to 1 leaves the large layer for the
/// small one in one step, not a rung each 2 s); it steps up once the link
/// has held the current rung for ``firstHold`` with no trouble: one rung,
/// or, when its frames show the link's capacity, to the highest rung up to
/// the next substream at its full rate that the capacity has room for (a
/// free link goes from the small layer to the whole picture at its full
/// rate in one step, not through 5 s of its base layer at half the rate).
/// A step up also waits until the link has room for the rung above, when
/// the mountpoint says its layers' bitrates: the link's time on a frame
/// grows with its size by one over the link's rate (its packets leave the
/// narrowest hop one after another), so the slope of that time against
/// size over the last ``capacityFrames`` frames other than keyframes gives
/// the link's capacity, without a probe (frames of the two temporal layers
/// differ enough in size), and a step up needs ``headroom`` times the rung's
/// bitrate (a base temporal layer carries ``baseShare`` of its layer's).
/// The link's time on a frame runs from when it could start on the frame
/// (sent, at the least delay seen, or the frame before it through,
/// whichever is later) to its arrival: taken as a frame's whole delay,
/// the frames queued behind a keyframe counted its time as theirs, small
/// frames late, and the slope flattened (through Janus, on a 1 Mbit/s link,
/// 1.18 Mbit/s read while a 39 KB keyframe was among the last 60 frames,
/// and the viewers stepped up to the large layer's base, 900 kbit/s; now
/// 0.92–0.96). Keyframes are left out of it: the host paces a stream at
/// 2.5 times its layer's bitrate (RTPSender), slower than a free link, so
/// a keyframe's time there read the pacer, and a small layer's keyframe
/// (40 KB at 937 kbit/s) weighed most in the slope: a viewer on a free
/// link stayed on the small layer. On a link of
/// 1 Mbit/s a viewer so stays on the small layer instead of trying the
/// large one, whose keyframe alone would fill the link's queue, and when
/// the link widens again it sees the room at once.
/// After a step down it judges the link again only ``switchGap`` later:
/// Janus moves a viewer at the next keyframe, and the queue the rung above
/// built drains meanwhile.
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
/// a step down long after the last step up (the link changed) resets it.
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
    /// The least time between two steps down (after a step up, none): a switch waits for a keyframe on the new substream.
    static let switchGap = 2000.0
    static let firstHold = 5000.0
    static let longestHold = 40_000.0
    static let recentUp = 10_000.0
    /// Frames the capacity is measured over, the least to say anything, and the spread of their sizes it needs (bytes).
    static let capacityFrames = 60
    static let capacityMinimum = 30
    static let sizeSpread = 300.0
    static let headroom = 1.2
    /// The base temporal layer's share of its layer's bitrate (the host's split, ``VP8Settings/baseLayerPercent``).
    static let baseShare = 0.6

    let ladder: [Layer]
    /// Each rung's bitrate (kbit/s), when the mountpoint said its layers'.
    let rungBitrates: [Double]?
    private(set) var rung: Int
    /// The last frames' sizes and the link's time on each (ms), oldest first, for the capacity.
    private var sizes: [(bytes: Double, busy: Double)] = []
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
    /// The bytes of the frames received whole since the last evaluation, and when it was.
    private var windowBytes = 0.0
    private var windowStart: Double

    /// A viewer of a mountpoint with `layers` simulcast layers (each with
    /// two temporal layers) of `bitrates` (kbit/s, smallest first, when
    /// known) that joins at `now`.
    init(layers: Int, bitrates: [Int]? = nil, now: Double) {
        ladder = (0..<layers).flatMap { [Layer(substream: $0, temporal: 0), Layer(substream: $0, temporal: 1)] }
        rungBitrates = bitrates.flatMap { rates in rates.count == layers ? rates.flatMap { [Double($0) * Self.baseShare, Double($0)] } : nil }
        rung = 1
        lastSwitch = now
        lastTrouble = now
        nextEvaluation = now + Self.evaluateEvery
        lastFrame = now
        windowStart = now
    }

    /// A frame of `bytes` received whole at `now` with RTP timestamp `timestamp` (`keyframe`: a keyframe, not in the capacity).
    mutating func frame(at now: Double, timestamp: UInt32, bytes: Int, keyframe: Bool = false) {
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
        let floor = floors.reduce(Double.infinity) { min($0, $1.delay) }
        delaySum += delay - floor
        delayCount += 1
        // The link's time on this frame alone: from when it could start on it (sent, at the least delay, or the frame before through).
        let busy = now - max(lastFrame, rtpTime + floor)
        lastFrame = now
        if !keyframe {
            sizes.append((Double(bytes), busy))
            if sizes.count > Self.capacityFrames { sizes.removeFirst() }
        }
        windowBytes += Double(bytes)
    }

    /// The link's capacity (kbit/s) from the slope of the last frames' time
    /// on the link against their size; nil when too few frames, or too alike
    /// in size, say it; infinity when that time does not grow with size.
    var capacity: Double? {
        guard sizes.count >= Self.capacityMinimum else { return nil }
        let n = Double(sizes.count)
        let meanBytes = sizes.reduce(0) { $0 + $1.bytes } / n, meanBusy = sizes.reduce(0) { $0 + $1.busy } / n
        let spread = sizes.reduce(0) { $0 + ($1.bytes - meanBytes) * ($1.bytes - meanBytes) }
        guard spread / n >= Self.sizeSpread * Self.sizeSpread else { return nil }
        let slope = sizes.reduce(0) { $0 + ($1.bytes - meanBytes) * ($1.busy - meanBusy) } / spread
        return slope > 0 ? 8 / slope : .infinity
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
        let received = windowBytes * 8 / max(1, now - windowStart)  // kbit/s
        (delaySum, delayCount, missing, windowBytes, windowStart) = (0, 0, 0, 0, now)
        if trouble {
            lastTrouble = now
            guard rung > 0, lastSwitch == lastUp || now - lastSwitch >= Self.switchGap else { return nil }
            if lastSwitch == lastUp, now - lastUp < Self.recentUp {
                hold = min(Self.longestHold, hold * 2)
            } else if now - lastUp >= Self.recentUp {
                hold = Self.firstHold
            }
            rung -= 1
            if let rates = rungBitrates { while rung > 0, rates[rung] * Self.headroom > received { rung -= 1 } }
            lastSwitch = now
            return layer
        }
        guard rung < ladder.count - 1, now - lastTrouble >= hold, now - lastSwitch >= hold else { return nil }
        if let rates = rungBitrates, let capacity {
            // The highest rung up to the next substream at its full rate that the link has room for.
            let reach = min(ladder.count - 1, (layer.substream + 1) * 2 + 1)
            guard let target = (rung + 1...reach).last(where: { capacity >= rates[$0] * Self.headroom }) else { return nil }
            rung = target
        } else {
            rung += 1
        }
        lastSwitch = now
        lastUp = now
        return layer
    }
}
