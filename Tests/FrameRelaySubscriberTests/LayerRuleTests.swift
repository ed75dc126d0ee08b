import Foundation
@testable import FrameRelayHost
@testable import FrameRelaySubscriber
import FrameRelayJanus
import FrameRelayRTP
import FrameRelayTestSupport
import Testing

/// Which layer a viewer of a simulcast mountpoint watches: the
/// subscriber's ``LayerRule`` on recorded sequences whose answer is known,
/// and the viewer page's JavaScript mirror of it (run by node) on the same
/// sequences and generated ones, which must step exactly where the Swift
/// type steps.
@Suite struct LayerRuleTests {
    /// What a viewer saw, event by event: at `t` ms, a frame received whole
    /// (`frame`: its RTP timestamp), frames missed (`missed`), or the
    /// packets expected and lost after repair so far (`tick`).
    struct Event: Codable {
        var t: Double
        var frame: UInt32?
        var bytes: Int?
        var keyframe: Bool?
        var missed: Int?
        var tick: [UInt64]?
    }

    struct Sequence: Codable {
        var name: String
        var layers: Int
        var bitrates: [Int]?
        var events: [Event]
    }

    /// A link, 30 frames/s of 2,000 bytes: each frame's extra delay (ms)
    /// and whether it arrives, and the fraction of packets lost after
    /// repair, from `at` ms on; with `capacity` (kbit/s), a keyframe of
    /// 20,000 bytes every 4 s, and each frame leaves the link after the one
    /// before it, as late as its size makes it at that rate.
    /// `frames`: one sent every `every` 30 frames/s ticks, of `bytes` in turn, and with a capacity a keyframe of `keyframe` bytes every `keyframeEvery` ticks,
    /// sent at `keyframePace` kbit/s (the host's pacer) where that is slower than the link.
    static func link(_ name: String, seconds: Double, layers: Int = 2, bitrates: [Int]? = nil, capacity: Double? = nil,
                     frames: (every: Int, bytes: (Int, Int), keyframe: Int, keyframeEvery: Int, keyframePace: Double) = (1, (2400, 1600), 20_000, 120, .infinity),
                     delay: (Double) -> Double = { _ in 0 },
                     arrives: (Double) -> Bool = { _ in true }, loss: (Double) -> Double = { _ in 0 }, missed: (Double) -> Int = { _ in 0 }) -> Sequence {
        var events: [Event] = []
        var timestamp: UInt32 = 0xFFFF_0000  // wraps on the way
        var expected: UInt64 = 0, lost = 0.0
        var t = 0.0, free = 0.0
        var frame = 0
        while t < seconds * 1000 {
            // Base-layer frames larger than the ones between; with a capacity, a keyframe every 4 s, each frame as late as its size makes it.
            if frame % frames.every == 0 {
                let keyframe = capacity != nil && frame % frames.keyframeEvery == frames.keyframeEvery / 2
                let bytes = keyframe ? frames.keyframe : (frame / frames.every) % 2 == 0 ? frames.bytes.0 : frames.bytes.1
                if let capacity { free = max(t + 20 + delay(t), free) + Double(bytes) * 8 / min(capacity, keyframe ? frames.keyframePace : .infinity) }
                if arrives(t) { events.append(Event(t: capacity == nil ? t + 20 + delay(t) : free, frame: timestamp, bytes: bytes, keyframe: keyframe)) }
            }
            frame += 1
            if missed(t) > 0 { events.append(Event(t: t + 20, missed: missed(t))) }
            timestamp &+= 3000
            expected += 5
            lost += 5 * loss(t)
            // A tick every 100 ms, as the subscriber's loop polls.
            if Int(t / 33.333) % 3 == 0 { events.append(Event(t: t + 20, tick: [expected, UInt64(lost)])) }
            t += 33.333
        }
        return Sequence(name: name, layers: layers, bitrates: bitrates, events: events.sorted { $0.t < $1.t })
    }

    /// The steps the Swift type takes on `sequence`: "t substream/temporal".
    static func swift(_ sequence: Sequence) -> [String] {
        var rule = LayerRule(layers: sequence.layers, bitrates: sequence.bitrates, now: 0)
        var steps: [String] = []
        for event in sequence.events {
            if let timestamp = event.frame { rule.frame(at: event.t, timestamp: timestamp, bytes: event.bytes ?? 2000, keyframe: event.keyframe ?? false) }
            if let frames = event.missed { rule.missed(frames) }
            if let tick = event.tick, let layer = rule.tick(now: event.t, expected: tick[0], lost: tick[1]) {
                steps.append("\(Int(event.t.rounded())) \(layer)")
            }
        }
        return steps
    }

    /// When each step comes, in whole seconds (the rule evaluates every 500 ms).
    static func at(_ steps: [String]) -> [String] {
        steps.map { step in
            let parts = step.split(separator: " ")
            return "\(Int(Double(parts[0])! / 1000)) \(parts[1])"
        }
    }

    static let clean = link("clean", seconds: 30)
    /// From 12 s on a queue grows: each frame 200 ms a second later than the one before.
    static let queue = link("a queue from 12 s", seconds: 20, delay: { $0 < 12_000 ? 0 : ($0 - 12_000) * 0.2 })
    static let lossy = link("5 % lost from 12 s", seconds: 16, loss: { $0 < 12_000 ? 0 : 0.05 })
    static let silent = link("nothing from 12 s to 15 s", seconds: 16, arrives: { $0 < 12_000 || $0 >= 15_000 })
    /// A keyframe's burst on a good link: one frame 250 ms late and those behind it draining.
    static let burst = link("a keyframe's burst at 12 s", seconds: 16, delay: { $0 >= 12_000 && $0 < 12_300 ? 250 - ($0 - 12_000) * 0.8 : 0 })
    /// Trouble 3 s after every step up: the hold before the next one doubles.
    static let edge = link("trouble 3 s after each step up", seconds: 60, missed: { t in [8_000.0, 21_000, 44_000].contains { abs(t - $0) < 17 } ? 1 : 0 })

    @Test func aViewerStartsLowStepsUpOnAGoodLinkAndDownWithinTwoSecondsOfTrouble() {
        #expect(Self.at(Self.swift(Self.clean)) == ["5 1/0", "10 1/1"])
        // Down from the top within 2 s of the queue starting to grow, and on down while it grows, a step each 2 s
        // (the switch waits for a keyframe; the queue the rung above built drains meanwhile).
        #expect(Self.at(Self.swift(Self.queue)) == ["5 1/0", "10 1/1", "13 1/0", "16 0/1", "18 0/0"])
        #expect(Self.at(Self.swift(Self.lossy)) == ["5 1/0", "10 1/1", "12 1/0", "14 0/1"])
        #expect(Array(Self.at(Self.swift(Self.silent)).prefix(3)) == ["5 1/0", "10 1/1", "14 1/0"])
        // A burst that drains is no trouble.
        #expect(Self.at(Self.swift(Self.burst)) == ["5 1/0", "10 1/1"])
        // One layer: its two temporal layers only.
        #expect(Self.at(Self.swift(Self.link("one layer", seconds: 10, layers: 1))) == [])
    }

    /// Through 1 Mbit/s each frame comes 8 ms a kilobyte late (a keyframe
    /// 160 ms): the link has room for the small layer (625 kbit/s), not for
    /// the large one's base layer (1,500), so the viewer stays; through
    /// 5 Mbit/s it steps straight to the whole picture at its full rate;
    /// through 2.5 Mbit/s to its base layer (1,500 with headroom; the full
    /// rate, 2,500, needs 3,000).
    static let narrow = link("1 Mbit/s", seconds: 30, bitrates: [625, 2500], capacity: 1000)
    static let wide = link("5 Mbit/s", seconds: 30, bitrates: [625, 2500], capacity: 5000)
    static let middling = link("2.5 Mbit/s", seconds: 30, bitrates: [625, 2500], capacity: 2500)

    /// A link at 950 kbit/s, the small layer at 15 frames/s and a keyframe
    /// of 40 KB every 10 s: the frames behind a keyframe wait for it, small
    /// frames late. The link has room
    /// for the small layer, not for the large one's base (900 kbit/s, 1,080
    /// with headroom). Read from each frame's whole delay, the capacity came
    /// to 1.19 Mbit/s while a keyframe was among the last 60 frames, and the
    /// viewer stepped up; from the link's time on each frame alone, at most 1.02.
    static let queuedBehindKeyframes = link("950 kbit/s, frames queued behind keyframes", seconds: 30, bitrates: [375, 1500], capacity: 950,
                                            frames: (every: 2, bytes: (3000, 400), keyframe: 40_000, keyframeEvery: 300, keyframePace: .infinity))
    /// A free link (100 Mbit/s), the small layer's keyframe of 40 KB paced
    /// at 2.5 times its 375 kbit/s (937.5): counted, its time read the
    /// pacer's rate as the link's (under the 1,080 kbit/s the large
    /// layer's base needs with headroom), and the viewer stayed on the small layer.
    static let pacedKeyframes = link("100 Mbit/s, keyframes paced at 937.5 kbit/s", seconds: 20, bitrates: [375, 1500], capacity: 100_000,
                                     frames: (every: 1, bytes: (2400, 1600), keyframe: 40_000, keyframeEvery: 120, keyframePace: 937.5))

    @Test func aViewerStepsUpOnlyWhenItsFramesShowTheLinkHasRoomForTheRungAbove() {
        // Each keyframe's wait may step it down and back; never up to the large layer.
        let queued = Self.swift(Self.queuedBehindKeyframes)
        #expect(!queued.isEmpty && !queued.contains { $0.hasSuffix(" 1/0") || $0.hasSuffix(" 1/1") }, "\(queued)")
        #expect(Self.at(Self.swift(Self.narrow)) == [])
        #expect(Self.at(Self.swift(Self.wide)) == ["5 1/1"])
        #expect(Self.at(Self.swift(Self.pacedKeyframes)) == ["5 1/1"])
        #expect(Self.at(Self.swift(Self.middling)) == ["5 1/0"])
        // Without the layers' bitrates, the rule cannot tell: it tries.
        var unknown = Self.narrow
        unknown.bitrates = nil
        #expect(Self.at(Self.swift(unknown)).first == "5 1/0")
    }

    /// A 5 Mbit/s link that falls at 12 s to what brings 480 kbit/s, and
    /// queues: from the top straight down to the rung the link carried
    /// (the small layer's base, 375 kbit/s with headroom), not a rung each 2 s.
    static let falls = link("5 Mbit/s, then a queue from 12 s", seconds: 20, bitrates: [625, 2500], capacity: 5000,
                            delay: { $0 < 12_000 ? 0 : ($0 - 12_000) * 0.2 })

    @Test func aLinkThatFallsUnderSeveralRungsIsLeftInOneStep() {
        #expect(Self.at(Self.swift(Self.falls)) == ["5 1/1", "13 0/0"])
        // Without the layers' bitrates, a rung at a time.
        var unknown = Self.falls
        unknown.bitrates = nil
        #expect(Self.at(Self.swift(unknown)) == ["5 1/0", "10 1/1", "13 1/0", "16 0/1", "18 0/0"])
    }

    @Test func aStepUpMetByTroubleWaitsLongerBeforeTheNext() {
        // Up at 5 s; trouble at 8 s: down, and 10 s before the next try (at 18); trouble at 21: 20 s (at 41); at 44: 40 s.
        #expect(Self.at(Self.swift(Self.edge)) == ["5 1/0", "8 0/1", "18 1/0", "21 0/1", "41 1/0", "44 0/1"])
    }

    /// Sequences nobody worked out by hand: delay that wanders and jumps,
    /// loss in bursts, frames missed and stalls, from a fixed seed.
    static func generated(seed: UInt64) -> Sequence {
        var state = seed
        func uniform() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        let congested = (0..<6).map { _ in (uniform() * 100_000, 1000 + uniform() * 6000) }
        let lossy = (0..<4).map { _ in (uniform() * 100_000, 500 + uniform() * 3000, uniform() * 0.2) }
        let stalls = (0..<5).map { _ in uniform() * 100_000 }
        let jitter = (0..<4000).map { _ in uniform() * 30 }
        return link("seed \(seed)", seconds: 100, layers: 1 + Int(seed % 3), bitrates: seed % 3 == 1 ? [625, 2500] : seed % 3 == 2 ? [150, 625, 2500] : nil,
                    capacity: seed % 2 == 0 ? 800 + uniform() * 4000 : nil,
                    delay: { t in jitter[Int(t / 33.333) % jitter.count] + congested.reduce(0) { $0 + ((t >= $1.0 && t < $1.0 + $1.1) ? (t - $1.0) * 0.15 : 0) } },
                    arrives: { t in !stalls.contains { t >= $0 && t < $0 + 2500 } },
                    loss: { t in lossy.first { t >= $0.0 && t < $0.0 + $0.1 }?.2 ?? 0 },
                    missed: { t in stalls.contains { abs(t - $0) < 17 } ? 1 : 0 })
    }

    /// The subscriber's stream hands the rule each frame whole, marked a
    /// keyframe when its packets say so (``StreamFollower``): frames of our
    /// packetizer through a 2 Mbit/s link, 30 KB keyframes among them held
    /// to 500 kbit/s by the host's pacer. The capacity reads the link; with
    /// the keyframes in it, it would read nearer the pacer's rate.
    @Test func theSubscribersStreamLeavesKeyframesOutOfTheLinksCapacity() throws {
        let follower = try StreamFollower(payloadType: 96, retransmissionPayloadType: nil, decodes: false, expectedFrames: 256)
        follower.layerRule = LayerRule(layers: 2, bitrates: [625, 2500], now: 0)
        var packetizer = RTPPacketizer(ssrc: 0x1234_5678, maxPacketSize: 1200)
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1200, alignment: 8)
        defer { scratch.deallocate() }
        var free = 0.0, keyframes = 0
        for index in 0..<150 {
            let keyframe = index % 45 == 0
            let bytes = keyframe ? 30_000 : index % 2 == 0 ? 2400 : 600
            // P = 0 and the start code on a keyframe (RFC 6386 §9.1), 640 wide.
            var frame = [UInt8](repeating: 0x5A, count: bytes)
            frame.replaceSubrange(0..<10, with: keyframe ? [0x00, 0x00, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] : [0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            let sent = Double(index) * 1000 / 30
            free = max(free, sent + 20) + Double(bytes) * 8 / (keyframe ? 500 : 2000)  // ms: the link, or the pacer for a keyframe
            let arrival = UInt64(free * 1e6)
            frame.withUnsafeBytes { frame in
                packetizer.packetize(frame, timestamp: UInt32(index * 3000), scratch: scratch) { packet, _ in
                    #expect(follower.receive(packet, now: arrival))
                }
            }
            if keyframe { keyframes += 1 }
        }
        let capacity = try #require(follower.layerRule?.capacity, "no capacity from \(150 - keyframes) frames")
        #expect(abs(capacity - 2000) < 200, "\(capacity) kbit/s read on a 2,000 kbit/s link")
    }

    @Test func theViewerPagesMirrorStepsWhereTheSwiftTypeSteps() throws {
        let sequences = [Self.clean, Self.queue, Self.lossy, Self.silent, Self.burst, Self.edge, Self.narrow, Self.wide, Self.middling, Self.falls, Self.queuedBehindKeyframes, Self.pacedKeyframes] + (1...6).map { Self.generated(seed: $0) }
        let input = Paths.temporaryDirectory().appendingPathComponent("layer-sequences.json")
        try JSONEncoder().encode(sequences).write(to: input)
        let script = ViewerPage.layerRule + """
            const sequences = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
            console.log(JSON.stringify(sequences.map(s => {
              const rule = new LayerRule(s.layers, s.bitrates === undefined ? null : s.bitrates, 0), steps = [];
              for (const e of s.events) {
                if (e.frame !== undefined) rule.frame(e.t, e.frame, e.bytes === undefined ? 2000 : e.bytes, e.keyframe === true);
                if (e.missed !== undefined) rule.missed(e.missed);
                if (e.tick !== undefined) {
                  const layer = rule.tick(e.t, e.tick[0], e.tick[1]);
                  if (layer) steps.push(Math.round(e.t) + ' ' + layer.substream + '/' + layer.temporal);
                }
              }
              return steps;
            })));
            """
        let node = run("/usr/bin/node", ["-e", script, input.path], timeout: 30)
        #expect(node.status == 0, "\(node.stderr)")
        let results = try #require(try JSONSerialization.jsonObject(with: Data(node.stdout.utf8)) as? [[String]], "\(node.stdout) \(node.stderr)")
        try #require(results.count == sequences.count)
        var steps = 0
        for (sequence, result) in zip(sequences, results) {
            let swift = Self.swift(sequence)
            steps += swift.count
            #expect(result == swift, "\(sequence.name): JavaScript \(result), Swift \(swift)")
        }
        // The generated sequences are rough enough that a rule that never steps would not pass.
        #expect(steps >= 40, "\(steps) steps in all")
    }

    /// The page and the subscriber read a mountpoint's description alike
    /// (a browser and a native viewer of one mountpoint pick from the same
    /// ladder): what the host writes, and what they must not half-read.
    @Test func thePageAndTheSubscriberReadADescriptionAlike() throws {
        let cases: [(String, Int, [Int]?)] = [
            (JanusMountpoint.description(name: "g", bitrates: [625, 2500]), 2, [625, 2500]), ("g layers=3 kbps=150,625,2500", 3, [150, 625, 2500]),
            ("g layers=2", 2, nil), ("g", 1, nil), ("g layers=+2 kbps=500,2500", 1, nil), ("g layers=02", 1, nil), ("g layers=2 kbps=500,x,2500", 1, nil),
            ("g layers=2 kbps=500,2500 ", 1, nil), ("g layers=2 note kbps=500,2500", 1, nil), ("g layers=3 kbps=500,0,2500", 3, nil),
            ("g layers=2 kbps=2500,500", 2, nil), ("g layers=2 kbps=500,2500,900", 2, nil), ("g layers=2 kbps=500,200000", 2, nil), ("g layers=4", 1, nil),
            ("a layers=1 b layers=2 kbps=1,2", 2, [1, 2]), ("g\nlayers=2", 1, nil), ("", 1, nil),
            ("a\u{85}b layers=2", 1, nil), ("a\u{2028}b layers=2 kbps=1,2", 1, nil), ("a\rb layers=2", 1, nil), ("g\u{301} layers=2", 2, nil), ("g layers=2\u{301}", 1, nil),
        ]
        let input = Paths.temporaryDirectory().appendingPathComponent("layer-descriptions.json")
        try JSONEncoder().encode(cases.map(\.0)).write(to: input)
        let script = ViewerPage.layerRule + """
            const descriptions = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
            console.log(JSON.stringify(descriptions.map(d => { const r = layersInDescription(d); return [r.layers, r.bitrates || []]; })));
            """
        let node = run("/usr/bin/node", ["-e", script, input.path], timeout: 30)
        #expect(node.status == 0, "\(node.stderr)")
        let page = try #require(try JSONSerialization.jsonObject(with: Data(node.stdout.utf8)) as? [[Any]], "\(node.stdout) \(node.stderr)")
        try #require(page.count == cases.count)
        for ((description, layers, bitrates), read) in zip(cases, page) {
            let swift = JanusMountpoint.layers(inDescription: description)
            #expect(swift.layers == layers && swift.bitrates == bitrates, "\(description.debugDescription): Swift \(swift)")
            #expect(read[0] as? Int == layers && read[1] as? [Int] == (bitrates ?? []), "\(description.debugDescription): the page \(read)")
        }
    }
}
