@preconcurrency import Glibc
import Foundation
import FrameRelayTestSupport
import Testing

/// Producer and host as two real processes.
@Suite(.serialized) struct ProcessTests {
    @Test func fastProducerAgainstSlowHostAccountsForEveryFrame() throws {
        let group = uniqueGroup("rate")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let simStats = dir.appendingPathComponent("sim.json").path
        // Host first: it waits for the producer. It takes one frame in ten (≈24 of 240 a second).
        let h = host([group], ["--work-ms", "41", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--fps", "240", "--frames", "720", "--size", "160x120", "--report", simStats, "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let sim = try #require(try readJSON(simStats) as? [String: Any])
        let share = try #require(try readShareStats(hostStats).first)
        let written = sim["written"] as! Int, dropped = sim["dropped"] as! Int
        // The producer never waited: every one of its 720 samples was published.
        #expect(sim["frames"] as? Int == 720)
        #expect(written == 720)
        #expect(share.ring.written == 720)
        let taken = Int(share.taken)
        #expect(written == taken + dropped || written == taken + dropped + 1, "written \(written) taken \(taken) dropped \(dropped)")
        #expect(taken < 720 / 4, "the host was meant to be slow: took \(taken)")
        #expect(dropped > 720 / 2)
        #expect(!segmentExists(group))
    }

    @Test func noTornFrameOverThousandsOfFrames() throws {
        let group = uniqueGroup("torn")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        // Two producers one after the other into one host (so no --exit-when-finished: it could end between them).
        let h = host([group], ["--verify", "--report", hostStats])
        for format in ["i420", "bgra"] {
            let p = producer(group, ["--fps", "1000", "--frames", "3000", "--size", "96x64", "--format", format, "--checksum", "--quiet"])
            #expect(p.wait() == 0)
        }
        #expect(h.waitForLog(": finished", count: 2))
        h.signal(SIGINT)
        #expect(h.wait() == 0)
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.invalid == 0)
        #expect(share.checksumFailures == 0)
        #expect(share.taken >= 2000, "took \(share.taken) of 6000")
        #expect(share.producerAttaches == 2)
        #expect(!segmentExists(group))
    }

    @Test func producerFirstThenHost() throws {
        let group = uniqueGroup("order")
        let p = producer(group, ["--fps", "60", "--duration", "30", "--size", "64x64"])
        #expect(p.waitForLog("started"))
        let h = host([group], ["--frames", "20", "--quiet"])
        #expect(h.wait(timeout: 20) == 0)
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(!segmentExists(group))
    }

    @Test func killedProducerIsReplacedWithoutRestartingTheHost() throws {
        let group = uniqueGroup("kill")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--exit-when-finished", "--report", hostStats])
        let first = producer(group, ["--fps", "60", "--duration", "60", "--size", "128x96"])
        #expect(h.waitForLog("first-frame"))
        first.signal(SIGKILL)
        _ = first.wait()
        #expect(h.waitForLog("died"), "the host must say the producer is gone")
        #expect(segmentExists(group), "a killed producer leaves its segment until someone reclaims it")
        let second = producer(group, ["--fps", "60", "--frames", "60", "--size", "128x96"])
        #expect(second.wait() == 0)
        #expect(h.wait(timeout: 20) == 0)
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.producerAttaches == 2)
        #expect(share.producerDeaths == 1)
        // From the new ring's creation to its first frame taken: well under a second.
        let created = share.events.filter { $0.kind == "ring-created" }.map(\.time)
        let firstFrames = share.events.filter { $0.kind == "first-frame" }.map(\.time)
        #expect(created.count == 2 && firstFrames.count == 2)
        if created.count == 2, firstFrames.count == 2 {
            let recovery = Double(firstFrames[1] &- created[1]) / 1e9
            #expect(recovery < 1.0, "recovered in \(recovery) s")
        }
        #expect(!segmentExists(group))
    }

    @Test func killedHostIsReplacedWhileTheProducerKeepsRunning() throws {
        let group = uniqueGroup("killhost")
        let p = producer(group, ["--fps", "60", "--duration", "60", "--size", "128x96"])
        let firstHost = host([group], [])
        #expect(firstHost.waitForLog("first-frame"))
        firstHost.signal(SIGKILL)
        _ = firstHost.wait()
        usleep(300_000)
        #expect(p.process.isRunning, "the producer must survive its host")
        let secondHost = host([group], ["--frames", "30", "--quiet"])
        #expect(secondHost.wait(timeout: 20) == 0)
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(p.stderr.contains("finished"))
        #expect(!segmentExists(group))
    }

    @Test func staleSegmentOfAKilledProducerIsReclaimed() throws {
        let group = uniqueGroup("stale")
        let first = producer(group, ["--fps", "30", "--duration", "60", "--size", "64x64"])
        #expect(first.waitForLog("started"))
        first.signal(SIGKILL)
        _ = first.wait()
        #expect(segmentExists(group))
        // No host at all: the next producer reclaims the segment, and leaves nothing when it ends.
        let second = producer(group, ["--fps", "30", "--frames", "10", "--size", "64x64"])
        #expect(second.wait() == 0)
        #expect(!segmentExists(group))
        // And a host that outlives a killed producer removes the segment on exit.
        let third = producer(group, ["--fps", "30", "--duration", "60", "--size", "64x64"])
        let h = host([group], [])
        #expect(h.waitForLog("first-frame"))
        third.signal(SIGKILL)
        _ = third.wait()
        #expect(h.waitForLog("died"))
        h.signal(SIGINT)
        #expect(h.wait() == 0)
        #expect(!segmentExists(group))
    }

    @Test func secondHostOnTheSameGroupIsRefused() throws {
        let group = uniqueGroup("twohosts")
        let p = producer(group, ["--fps", "30", "--duration", "60", "--size", "64x64"])
        let first = host([group], [])
        #expect(first.waitForLog("first-frame"))
        let second = host([group], ["--quiet"])
        #expect(second.wait(timeout: 10) == 1)
        #expect(second.stderr.contains("is already hosted by pid \(first.pid)"))
        first.signal(SIGINT)
        #expect(first.wait() == 0)
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(!segmentExists(group))
    }

    /// A host attaching to the ring of a producer killed with kill -9
    /// streams its last frame but leaves it out of the latency figures,
    /// saying once how stale it was.
    @Test func aStaleFrameFromAGoneProducerIsLeftOutOfTheLatency() throws {
        let group = uniqueGroup("stale")
        let p = producer(group, ["--fps", "30", "--size", "320x240", "--quiet"])
        usleep(1_500_000)
        p.signal(SIGKILL)
        _ = p.wait()
        usleep(1_500_000)
        let report = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([group], ["--duration", "2", "--report", report])
        #expect(h.wait() == 0)
        #expect(h.stderr.contains("s before this host attached: stale, left out of the latency figures"), "\(h.stderr)")
        let share = try #require(try readShareStats(report).first)
        #expect(share.encoded?.frames == 1 && share.encoded?.captureToEncoded.count == 0, "\(String(describing: share.encoded))")
        #expect(!segmentExists(group))
    }

    @Test func lifecycleAndMidStreamChangesArriveWithCorrectMetadata() throws {
        let group = uniqueGroup("life")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, [
            "--fps", "50", "--frames", "150", "--size", "320x240", "--format", "nv12", "--pause", "0.5:0.5",
            "--switch", "50:200x100:bgra:right", "--switch", "100:33x17:i420:down",
        ])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.events.map(\.kind).filter { $0 != "ring-created" && $0 != "first-frame" } == ["attached", "started", "paused", "resumed", "finished"])
        // A producer turned to the right stores its picture turned: 200x100 upright is stored 100x200.
        let geometries = share.geometries.map { $0.components(separatedBy: " from ").first! }
        #expect(geometries == ["320x240 nv12 up", "100x200 bgra right", "33x17 i420 down"])
        #expect(share.geometries[1].hasSuffix("from frame 50"))
    }

    /// A closed terminal (SIGHUP) ends either side as Ctrl-C does: clean exit, ring removed.
    @Test func hangUpStopsBothSidesCleanly() throws {
        let group = uniqueGroup("hup")
        let h = host([group], [])
        let p = producer(group, ["--fps", "30", "--size", "64x64", "--quiet"])
        #expect(h.waitForLog("first-frame"))
        p.signal(SIGHUP)
        #expect(p.wait(timeout: 10) == 0)
        h.signal(SIGHUP)
        #expect(h.wait(timeout: 10) == 0)
        #expect(!segmentExists(group))
    }

    /// A stop signal ends either side cleanly whichever of its threads the
    /// kernel hands it to (a host once trapped on SIGTERM caught by a share
    /// thread: its handler was isolated to the main actor): SIGTERM sent to
    /// every thread of the host but the main one (tgkill, through Python's ctypes).
    @Test func aStopSignalCaughtByAnyThreadEndsEitherSideCleanly() throws {
        let group = uniqueGroup("tgkill")
        let dir = Paths.temporaryDirectory()
        let report = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--report", report])
        let p = producer(group, ["--fps", "30", "--size", "64x64", "--quiet"])
        #expect(h.waitForLog("first-frame"))
        for side in [p, h] {
            // broadcast-sim has one thread: it gets the signal there.
            let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(side.pid)/task")) ?? []).compactMap(Int32.init)
            let threads = all.count == 1 ? all : all.filter { $0 != side.pid }
            if side === h { try #require(all.count >= 2, "the host has \(all.count) thread") }
            let sent = run("/usr/bin/python3", ["-c", "import ctypes, sys; libc = ctypes.CDLL(None)\nfor t in sys.argv[2:]: assert libc.tgkill(int(sys.argv[1]), int(t), 15) == 0",
                                                "\(side.pid)"] + threads.map(String.init))
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(side.wait(timeout: 10) == 0, "\(String(side.stderr.suffix(800)))")
            #expect(!side.stderr.contains("crashed"), "\(String(side.stderr.suffix(800)))")
        }
        #expect(FileManager.default.fileExists(atPath: report), "the host wrote no report")
        #expect(!segmentExists(group))
    }

    /// Anyone may bind an App Group's claim first (an abstract socket has no
    /// owner): a host refused by a process that is not a frame-relay host of
    /// this user names it, with its pid, user and program, and touches nothing.
    @Test func aClaimHeldByAnotherProgramOrUserIsNamedForWhatItIs() throws {
        let group = uniqueGroup("squat")
        let recording = Paths.temporaryDirectory().appendingPathComponent("r.ivf").path
        let name = "frame-relay-host" + group.sharedMemoryName
        let squatter = "import socket, sys, time\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ns.bind('\\0' + sys.argv[1])\ns.listen(1)\nprint('bound', flush=True)\ntime.sleep(30)"
        for (user, uid) in [([] as [String], getuid()), (["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], 65534)] {
            let holder = Spawned(user.first ?? "/usr/bin/python3", Array(user.dropFirst()) + (user.isEmpty ? [] : ["/usr/bin/python3"]) + ["-c", squatter, name])
            defer { holder.signal(SIGKILL) }
            for _ in 0..<100 where !holder.stdout.contains("bound") { usleep(50_000) }
            let refused = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--record", recording, "--duration", "1"])
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr == "frame-relay: error: \(group.name) is claimed by pid \(holder.pid) (uid \(uid), python3), not a frame-relay host of this user: "
                + "this host opened and wrote nothing; stop that process or use another App Group\n", "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: recording))
        }
        // One that binds the name and does not listen cannot be asked: it is not taken for a host either.
        let mute = Spawned("/usr/bin/python3", ["-c", squatter.replacingOccurrences(of: "s.listen(1)\n", with: ""), name])
        defer { mute.signal(SIGKILL) }
        for _ in 0..<100 where !mute.stdout.contains("bound") { usleep(50_000) }
        let refused = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--duration", "1"])
        #expect(refused.status == 1 && refused.stderr.contains("is claimed by a process that does not answer as a frame-relay host does"), "\(refused.stderr)")
    }

    @Test func signalPausesAndResumesLive() throws {
        let group = uniqueGroup("sig")
        let h = host([group], [])
        let p = producer(group, ["--fps", "30", "--duration", "60", "--size", "64x64"])
        #expect(h.waitForLog("first-frame"))
        p.signal(SIGUSR1)
        #expect(h.waitForLog(": paused"))
        p.signal(SIGUSR1)
        #expect(h.waitForLog(": resumed"))
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(h.waitForLog(": finished"))
        h.signal(SIGINT)
        #expect(h.wait() == 0)
        #expect(!segmentExists(group))
    }

    @Test func hostControlsTheProducerRateAndStop() throws {
        let group = uniqueGroup("control")
        let dir = Paths.temporaryDirectory()
        let simStats = dir.appendingPathComponent("sim.json").path
        let h = host([group], ["--max-fps", "10", "--stop-after", "15", "--exit-when-finished", "--quiet"])
        let p = producer(group, ["--fps", "100", "--duration", "60", "--size", "64x64", "--report", simStats])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.wait() == 0)
        let sim = try #require(try readJSON(simStats) as? [String: Any])
        #expect(sim["stopReason"] as? String == "host asked to stop")
        #expect((sim["throttled"] as? Int ?? 0) > 50, "\(sim)")
        #expect(!segmentExists(group))
    }

    @Test func severalGroupsInOneHost() throws {
        let groups = [uniqueGroup("multi"), uniqueGroup("multi"), uniqueGroup("multi")]
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host(groups, ["--exit-when-finished", "--report", hostStats, "--quiet"])
        let producers = groups.map { producer($0, ["--fps", "30", "--frames", "40", "--size", "64x64", "--quiet"]) }
        for p in producers { #expect(p.wait() == 0) }
        #expect(h.wait() == 0)
        let shares = try readShareStats(hostStats)
        #expect(Set(shares.map(\.appGroup)) == Set(groups.map(\.name)))
        for share in shares { #expect(share.taken > 0 && share.ring.written == 40) }
        for group in groups { #expect(!segmentExists(group)) }
    }

    @Test func devicePresetsSendTheirScreenSize() throws {
        let group = uniqueGroup("preset")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--no-encode", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--preset", "iphone-se", "--frames", "10", "--fps", "30", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.geometries.first?.hasPrefix("750x1334 nv12 up") == true, "\(share.geometries)")
    }
}
