@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayTools
import FrameRelayTestSupport
import Testing

/// A load test's children (producers, hosts) stopped with SIGSTOP or
/// killed with SIGKILL mid-step: the step ends on time with a line that
/// says what happened, and nothing is left in /dev/shm or the process table.
@Suite(.serialized) struct LoadTestChildrenTests {
    /// The pids of the processes whose command line contains `text`.
    static func pids(_ text: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(text)
        }
    }

    /// A load test of `sessions` shares of 320×240 at 15 frames/s in `hosts`
    /// hosts, with its own App Groups; `body` gets it once its step started.
    func loadTest(sessions: Int, hosts: Int = 1, duration: Int, _ body: (Spawned, String) throws -> Void) throws -> (prefix: String, report: String) {
        let prefix = uniqueGroup("ltchild").name
        let dir = Paths.temporaryDirectory()
        let report = dir.appendingPathComponent("load.json").path
        let load = Spawned(Paths.executable("frame-relay"), [
            "load-test", "--sessions", "\(sessions)", "--hosts", "\(hosts)", "--app-groups", prefix, "--size", "320x240", "--fps", "15",
            "--duration", "\(duration)", "--report", report, "--html", dir.appendingPathComponent("load.html").path,
        ])
        try #require(load.waitForLog("for \(duration) s…"), "\(load.stderr)")
        try body(load, prefix)
        #expect(Self.pids(prefix).isEmpty, "left running: \(Self.pids(prefix))")
        for share in 0..<sessions { #expect(!segmentExists(try AppGroup("\(prefix).s\(share)")), "share \(share)'s ring is left in /dev/shm") }
        return (prefix, report)
    }

    /// Waits until `pids(text)` names one process; its pid.
    static func child(_ text: String) throws -> Int32 {
        for _ in 0..<100 {
            if let pid = pids(text).first { return pid }
            usleep(50_000)
        }
        throw ChildNotFound(text: text)
    }

    struct ChildNotFound: Error { var text: String }

    @Test func aStoppedProducerFailsItsStepSayingSoAndLeavesNoRing() throws {
        var stderr = ""
        let (prefix, report) = try loadTest(sessions: 1, duration: 8) { load, prefix in
            sleep(3)
            kill(try Self.child("broadcast-sim --app-group \(prefix).s0"), SIGSTOP)
            #expect(load.wait(timeout: 30) == 0, "\(load.stderr)")
            stderr = load.stderr
        }
        #expect(stderr.contains("1 share did not hold"), "\(stderr)")
        let line = try #require(stderr.split(separator: "\n").first { $0.contains("share 1 (\(prefix).s0): its producer sent") }, "\(stderr)")
        #expect(line.hasSuffix("limit ≥ 13.5 (its process was stopped (SIGSTOP) during the step)"), "\(line)")
        let step = try #require(try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: report))).steps.first)
        let rate = try #require(step.shares.first?.steady?.framesPerSecond)
        #expect(!step.passed && rate < 5, "\(rate) frames/s after the warm-up")
    }

    @Test func aKilledProducerEndsTheStepSayingItWasKilled() throws {
        _ = try loadTest(sessions: 1, duration: 20) { load, prefix in
            sleep(2)
            kill(try Self.child("broadcast-sim --app-group \(prefix).s0"), SIGKILL)
            let killed = MonotonicClock.now()
            #expect(load.wait(timeout: 30) == 1, "\(load.stderr)")
            let seconds = Double(MonotonicClock.now() - killed) / 1e9
            #expect(seconds < 3, "\(seconds) s after the kill")
            #expect(load.stderr.contains("the producer of share 1 (\(prefix).s0) ended during the step: killed by signal 9"), "\(load.stderr)")
        }
    }

    /// One of two hosts stopped or killed 3 s into a 20 s step: the load
    /// test ends within 5 s, naming the host and what happened to it.
    @Test(arguments: [SIGSTOP, SIGKILL])
    func aHostStoppedOrKilledEndsTheStepOnTimeSayingSo(signal: Int32) throws {
        _ = try loadTest(sessions: 2, hosts: 2, duration: 20) { load, prefix in
            sleep(3)
            let host = try Self.child("frame-relay --app-group \(prefix).s0")
            kill(host, signal)
            let sent = MonotonicClock.now()
            #expect(load.wait(timeout: 30) == 1, "\(load.stderr)")
            let seconds = Double(MonotonicClock.now() - sent) / 1e9
            #expect(seconds < 5, "\(seconds) s after the signal")
            let said = signal == SIGSTOP ? "was stopped (SIGSTOP): it ends the step" : "ended (killed by signal 9)"
            #expect(load.stderr.contains("load-test host 1 of 2 (pid \(host)) \(said)"), "\(load.stderr)")
        }
    }

    /// Ctrl-C cuts a step short: it says so, judges nothing held, and the run exits 1.
    @Test func aStepCutShortByCtrlCIsNotJudged() throws {
        let (_, report) = try loadTest(sessions: 1, duration: 20) { load, _ in
            sleep(5)
            load.signal(SIGINT)
            #expect(load.wait(timeout: 10) == 1, "\(load.stderr)")
            #expect(load.stderr.contains("1 share interrupted after ") && load.stderr.contains("of 20.0 s, not judged"), "\(load.stderr)")
            #expect(load.stderr.split(separator: "\n").last == "frame-relay: load-test: interrupted by a signal: the last step was cut short and is not judged", "\(load.stderr)")
        }
        let step = try #require(try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: report))).steps.first)
        #expect(step.interrupted && !step.passed && step.failures.first?.hasPrefix("interrupted by a signal after ") == true, "\(step.failures)")
    }

    /// Ctrl-C while a host is stopped ends the run within 5 s.
    @Test func ctrlCEndsARunWhoseHostIsStoppedWithinFiveSeconds() throws {
        _ = try loadTest(sessions: 2, hosts: 2, duration: 20) { load, prefix in
            sleep(3)
            kill(try Self.child("frame-relay --app-group \(prefix).s1"), SIGSTOP)
            load.signal(SIGINT)
            let sent = MonotonicClock.now()
            _ = load.wait(timeout: 30)
            let seconds = Double(MonotonicClock.now() - sent) / 1e9
            #expect(seconds < 5, "\(seconds) s after Ctrl-C: \(load.stderr)")
        }
    }
}
