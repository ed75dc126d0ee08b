import Foundation
@testable import FrameRelayHost
@testable import FrameRelaySubscriber
import FrameRelayTestSupport
import Testing

/// When a gap between two frames is a freeze: the subscriber's
/// ``FreezeDetector`` on sequences whose answer is known, and the viewer
/// page's JavaScript mirror of it (run by node) on the same sequences and
/// more, which must count exactly what the Swift type counts.
@Suite struct FreezeRuleTests {
    /// A sequence: each frame's gap after the one before at the host (ms,
    /// as RTP timestamps) and at the viewer (ms), and what the viewer did
    /// with it: `s` shown, `w` received whole but not shown (a wait for a
    /// keyframe), `l` lost (default: every frame shown).
    struct Sequence: Codable {
        var name: String
        var host: [Double]
        var viewer: [Double]
        var kinds = ""

        func kind(_ index: Int) -> Character { index < kinds.count ? kinds[kinds.index(kinds.startIndex, offsetBy: index)] : "s" }
    }

    /// What the Swift type counts on `sequence`: freezes, and the time they added (ms).
    static func swift(_ sequence: Sequence) -> (count: UInt64, frozenMs: Double) {
        var detector = FreezeDetector()
        var now: UInt64 = 1_000_000_000, timestamp: UInt32 = 0xFFFF_F000  // wraps on the way
        detector.receivedWhole(timestamp: timestamp)
        _ = detector.frame(at: now, timestamp: timestamp)
        for (index, (gap, arrival)) in zip(sequence.host, sequence.viewer).enumerated() {
            now += UInt64(arrival * 1e6)
            timestamp &+= UInt32(gap * 90)
            let kind = sequence.kind(index)
            if kind != "l" { detector.receivedWhole(timestamp: timestamp) }
            if kind == "s" { _ = detector.frame(at: now, timestamp: timestamp) }
        }
        return (detector.freezes, Double(detector.frozen) / 1e6)
    }

    static let steady = [Double](repeating: 33, count: 10)
    static let slow = [Double](repeating: 200, count: 10)
    static let stills: [Double] = [33, 33, 33, 33, 33, 33, 2000, 33, 33, 33, 4000, 33, 33]

    /// Sequences with their known answers.
    static let known: [(Sequence, UInt64)] = [
        // 30 frames/s: a gap of the mean + 150 ms or more is a freeze (183 ms here), 170 ms is not.
        (Sequence(name: "steady, 170 ms", host: steady + [33], viewer: steady + [170]), 0),
        (Sequence(name: "steady, 190 ms", host: steady + [33], viewer: steady + [190]), 1),
        // 5 frames/s: 3 × the mean (600 ms) is the bar, not the mean + 150 ms.
        (Sequence(name: "5 fps, 550 ms", host: slow + [200], viewer: slow + [550]), 0),
        (Sequence(name: "5 fps, 610 ms", host: slow + [200], viewer: slow + [610]), 1),
        // A still screen: the host sent nothing for 2 s and then 4 s, and the viewer waited as long, give or take.
        (Sequence(name: "stills", host: stills, viewer: [33, 40, 26, 33, 33, 33, 2030, 36, 30, 33, 3990, 50, 20]), 0),
        // The viewer's own wait is still seen, at the first picture after a still one and at the steady rate after it.
        (Sequence(name: "late after a still", host: stills, viewer: [33, 40, 26, 33, 33, 33, 2400, 36, 30, 33, 3990, 50, 20]), 1),
        (Sequence(name: "stalled after a still", host: stills, viewer: [33, 40, 26, 33, 33, 33, 2030, 36, 30, 33, 3990, 250, 20]), 1),
        // A frame lost for good: the frames after it come whole and on time but cannot be shown until a keyframe, 700 ms on.
        (Sequence(name: "a wait for a keyframe", host: [Double](repeating: 33, count: 32), viewer: [Double](repeating: 33, count: 32),
                  kinds: String(repeating: "s", count: 10) + "l" + String(repeating: "w", count: 20) + "s"), 1),
        // The same wait as the screen goes still: the picture the viewer could not show stood at the host for 2 s, and the viewer missed it all.
        (Sequence(name: "a wait for a keyframe over a still", host: [Double](repeating: 33, count: 12) + [2000], viewer: [Double](repeating: 33, count: 12) + [2010],
                  kinds: String(repeating: "s", count: 10) + "lws"), 1),
        // A frame lost whole as the screen goes still, the next one shown (a keyframe): nothing came between, so the host's gap is the still's (a frame the viewer never got, it cannot place).
        (Sequence(name: "a frame lost before a still", host: [Double](repeating: 33, count: 11) + [2000], viewer: [Double](repeating: 33, count: 11) + [2010],
                  kinds: String(repeating: "s", count: 10) + "ls"), 0),
    ]

    @Test func theRuleCountsWhatTheViewerMissedNotWhatTheHostLeftOut() {
        for (sequence, freezes) in Self.known {
            #expect(Self.swift(sequence).count == freezes, "\(sequence.name)")
        }
        #expect(Self.swift(Self.known[1].0).frozenMs == 157)
        #expect(Self.swift(Self.known[5].0).frozenMs == 400)
        // 22 frames' time (726 ms) against the host's gap to the first frame after the last shown that came whole (66 ms).
        #expect(Self.swift(Self.known[7].0).frozenMs == 660)
    }

    /// Sequences nobody worked out by hand: a content screen's rhythm
    /// (bursts at 30 frames/s, stills of up to 3 s, refinements) through a
    /// link with jitter and stalls, from a fixed seed.
    static func generated(seed: UInt64, frames: Int) -> Sequence {
        var state = seed
        func uniform() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        var host: [Double] = [], viewer: [Double] = [], kinds = "", lateness = 0.0, waiting = 0
        for _ in 0..<frames {
            let roll = uniform()
            let gap = roll < 0.08 ? 300 + uniform() * 2700 : roll < 0.2 ? 66 + uniform() * 200 : 33
            // Each frame's lateness at the viewer: mostly jitter, now and then a stall of up to 600 ms.
            let next = uniform() < 0.05 ? uniform() * 600 : uniform() * 20
            host.append(gap.rounded())
            viewer.append(max(0, gap + next - lateness).rounded())
            lateness = next
            // Now and then a frame lost for good, and the frames after it waiting for a keyframe (up to 30 of them).
            if waiting > 0 {
                waiting -= 1
                kinds += waiting == 0 ? "s" : uniform() < 0.1 ? "l" : "w"
            } else if uniform() < 0.02 {
                kinds += "l"
                waiting = 1 + Int(uniform() * 30)
            } else {
                kinds += "s"
            }
        }
        return Sequence(name: "seed \(seed)", host: host, viewer: viewer, kinds: kinds)
    }

    @Test func theViewerPagesMirrorCountsWhatTheSwiftTypeCounts() throws {
        let sequences = Self.known.map(\.0) + (1...6).map { Self.generated(seed: $0, frames: 600) }
        let input = Paths.temporaryDirectory().appendingPathComponent("sequences.json")
        try JSONEncoder().encode(sequences).write(to: input)
        let script = ViewerPage.freezeRule + """
            const sequences = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
            console.log(JSON.stringify(sequences.map(s => {
              const d = new FreezeDetector();
              let now = 1000, timestamp = 0xFFFFF000;
              d.receivedWhole(timestamp);
              d.frame(now, timestamp);
              s.host.forEach((gap, i) => {
                now += s.viewer[i];
                timestamp = (timestamp + gap * 90) >>> 0;
                const kind = s.kinds[i] || 's';
                if (kind !== 'l') d.receivedWhole(timestamp);
                if (kind === 's') d.frame(now, timestamp);
              });
              return [d.freezes, d.frozen];
            })));
            """
        let node = run("/usr/bin/node", ["-e", script, input.path], timeout: 30)
        #expect(node.status == 0, "\(node.stderr)")
        let results = try #require(try JSONSerialization.jsonObject(with: Data(node.stdout.utf8)) as? [[Double]], "\(node.stdout) \(node.stderr)")
        try #require(results.count == sequences.count)
        var total: UInt64 = 0
        for (sequence, result) in zip(sequences, results) {
            let swift = Self.swift(sequence)
            total += swift.count
            #expect(UInt64(result[0]) == swift.count, "\(sequence.name): JavaScript \(result[0]), Swift \(swift.count)")
            #expect(abs(result[1] - swift.frozenMs) < 1, "\(sequence.name): JavaScript \(result[1]) ms, Swift \(swift.frozenMs) ms")
        }
        // The generated sequences stall often enough that a rule that never counts would not pass.
        #expect(total >= 20, "\(total) freezes in all")
    }

    /// The viewer page's script as it is served (the freeze rule included,
    /// a share's name in its menu) parses as JavaScript (node --check), and
    /// holds the rule once.
    @Test func theViewerPagesScriptParses() throws {
        let page = ViewerPage.html(shares: ["group.com.example.a"])
        #expect(page.contains("<option value=\"0\">group.com.example.a</option>") && page.components(separatedBy: "class FreezeDetector").count == 2)
        let script = try #require(page.components(separatedBy: "<script>").dropFirst().first?.components(separatedBy: "</script>").first)
        let file = Paths.temporaryDirectory().appendingPathComponent("viewer.js")
        try Data(script.utf8).write(to: file)
        let check = run("/usr/bin/node", ["--check", file.path], timeout: 30)
        #expect(check.status == 0, "\(check.stderr)")
    }
}
