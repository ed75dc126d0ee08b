@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayTestSupport
import Testing

/// One share's outputs are its own: a recording whose disk fills stops
/// alone, a second host never truncates the first one's files, and a
/// recording says from zero how long it lasts.
@Suite(.serialized) struct OutputIsolationTests {
    /// What ffprobe says of a file: its format's duration and start, and the stream's frame count (by reading every packet).
    func probe(_ path: String) -> (duration: Double, start: Double, frames: Int, width: Int, height: Int)? {
        let result = run("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-show_entries", "format=duration,start_time:stream=nb_read_packets,width,height", "-of", "json", path])
        guard result.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let format = json["format"] as? [String: Any], let stream = (json["streams"] as? [[String: Any]])?.first
        else { return nil }
        return (Double(format["duration"] as? String ?? "") ?? -1, Double(format["start_time"] as? String ?? "") ?? -1,
                Int(stream["nb_read_packets"] as? String ?? "") ?? -1, stream["width"] as? Int ?? 0, stream["height"] as? Int ?? 0)
    }

    /// Share A records onto a 1 MiB tmpfs, share B onto /tmp, one quiet
    /// host: A's recording stops with one line naming the share and the
    /// file (quiet or not), keeps its whole frames readable, and A goes on
    /// encoding; B records to the end; the report and /metrics say so, and
    /// the host exits 1 saying which recording stopped.
    @Test func aFullDiskStopsOnlyThatSharesRecording() throws {
        let a = uniqueGroup("fulla"), b = uniqueGroup("fullb")
        let dir = Paths.temporaryDirectory().path
        let full = dir + "/tmpfs"
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        let pa = producer(a, ["--size", "640x360", "--fps", "30", "--duration", "6", "--quiet"])
        let pb = producer(b, ["--size", "640x360", "--fps", "30", "--duration", "6", "--quiet"])
        let port = try SocketAddress.freeTCPPort()
        // A mount namespace of its own for the host, where the 1 MiB tmpfs is.
        let script = """
            mount -t tmpfs -o size=1m tmpfs '\(full)' || exit 97
            '\(Paths.executable("frame-relay"))' --app-group \(a.name) --app-group \(b.name) --record '\(full)/a.ivf' --record '\(dir)/b.ivf' \
              --http \(port) --exit-when-finished --report '\(dir)/host.json' --quiet &
            HOST=$!
            for i in $(seq 100); do curl -s http://127.0.0.1:\(port)/metrics > '\(dir)/metrics.txt' && grep -q 'recording_stopped.*1$' '\(dir)/metrics.txt' && break; sleep 0.1; done
            wait $HOST; echo "host exit $?"
            cp '\(full)/a.ivf' '\(dir)/a.ivf'
            """
        let host = run("/usr/bin/unshare", ["-rm", "/bin/sh", "-c", script], timeout: 60)
        #expect(pa.wait() == 0 && pb.wait() == 0)
        #expect(host.stdout.contains("host exit 1"), "\(host.stdout) \(host.stderr)")
        let stops = host.stderr.split(separator: "\n").filter { $0.contains("recording-stopped") }
        #expect(stops.count == 1 && stops[0].contains(a.name) && stops[0].contains("\(full)/a.ivf") && stops[0].contains("ENOSPC"), "\(host.stderr)")
        #expect(host.stderr.contains("frame-relay: error: \(a.name): the recording \(full)/a.ivf stopped after "), "\(host.stderr)")
        let shares = try readShareStats(dir + "/host.json")
        let recordingA = try #require(shares.first { $0.appGroup == a.name }?.recording), recordingB = try #require(shares.first { $0.appGroup == b.name }?.recording)
        let encodedA = shares.first { $0.appGroup == a.name }?.encoded?.frames ?? 0, encodedB = shares.first { $0.appGroup == b.name }?.encoded?.frames ?? 0
        print("full disk: share A recorded \(recordingA.frames) frames (\(recordingA.bytes) bytes) then stopped: \(recordingA.stopped ?? "-"); A encoded \(encodedA), B encoded \(encodedB) and recorded \(recordingB.frames)")
        #expect(recordingA.stopped != nil && recordingA.frames > 0 && recordingA.frames < encodedA, "\(recordingA)")
        #expect(recordingB.stopped == nil && recordingB.frames == encodedB && encodedB >= 150, "\(recordingB)")
        #expect(encodedA >= 150 && encodedA + 30 >= encodedB, "share A stopped encoding with its recording: \(encodedA) against \(encodedB)")
        // A's file holds whole frames only: ffmpeg reads every one of them.
        let probedA = try #require(probe(dir + "/a.ivf"), "ffprobe cannot read the cut recording")
        #expect(probedA.frames == Int(recordingA.frames) && probedA.width == 640, "\(probedA)")
        #expect(probe(dir + "/b.ivf")?.frames == Int(recordingB.frames))
        let metrics = (try? String(contentsOfFile: dir + "/metrics.txt", encoding: .utf8)) ?? ""
        #expect(metrics.contains("framerelay_recording_stopped{app_group=\"\(a.name)\"} 1") && metrics.contains("framerelay_recording_stopped{app_group=\"\(b.name)\"} 0"), "\(metrics)")
    }

    /// Ctrl-C during a recording: one line says what the file holds (frames,
    /// time, bytes, where), and it is what ffprobe reads there; the producer
    /// says once that its host went away, and goes on.
    @Test func ctrlCDuringARecordingSaysWhatWasWrittenAndTheProducerHearsOfIt() throws {
        let (group, path, h, p) = recordingShare("ctrlcrec", name: "screen.ivf", producer: ["--size", "320x240", "--fps", "30", "--duration", "6"])
        sleep(2)
        h.signal(SIGINT)
        #expect(h.wait(timeout: 10) == 0, "\(h.stderr)")
        let line = try #require(h.stderr.split(separator: "\n").first { $0.contains(": recorded ") }, "\(h.stderr)")
        let probed = try #require(probe(path), "ffprobe cannot read the recording")
        let bytes = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        // The frames and their bytes (the file, less its 32-byte header and 12 bytes a frame), and as long as ffprobe says it plays.
        #expect(line.hasPrefix("frame-relay: \(group.name): recorded \(probed.frames) frames, ") && line.hasSuffix(" bytes to \(path)"), "\(line)")
        #expect(line.contains(" \(bytes - 32 - 12 * probed.frames) bytes to "), "\(line): the file has \(bytes) bytes")
        let seconds = Double(line.split(separator: ",")[1].trimmingCharacters(in: .whitespaces).dropLast(2)) ?? -1
        #expect(probed.frames >= 40 && abs(seconds - probed.duration) <= 0.05, "\(line) against ffprobe's \(probed)")
        #expect(p.wait(timeout: 10) == 0)
        #expect(p.stderr.components(separatedBy: "the host (pid \(h.pid)) went away from \(group.name)").count == 2, "\(p.stderr)")
    }

    /// A second host of the same App Group naming the same recording is
    /// refused before it opens anything (one line naming the first host's
    /// pid), and a host of another App Group naming it cannot take the
    /// file's lock: the first host's recording is whole and right.
    @Test func aSecondHostNeverTruncatesTheFirstHostsRecording() throws {
        let group = uniqueGroup("tworec"), other = uniqueGroup("tworecb")
        let dir = Paths.temporaryDirectory().path
        let recording = dir + "/shared.ivf"
        let first = host([group], ["--record", recording, "--exit-when-finished"])
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--duration", "4", "--quiet"])
        #expect(first.waitForLog("first-frame"))
        usleep(500_000)
        let second = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--record", recording, "--duration", "2"])
        #expect(second.status == 1)
        let lines = second.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("\(group.name) is already hosted by pid \(first.pid)"), "\(second.stderr)")
        let third = run(Paths.executable("frame-relay"), ["--app-group", other.name, "--record", recording, "--duration", "2"])
        #expect(third.status == 1 && third.stderr.contains("cannot write recording \(recording): another process is writing it"), "\(third.stderr)")
        #expect(p.wait() == 0 && first.wait() == 0)
        let probed = try #require(probe(recording), "the first host's recording does not read")
        print("two hosts, one recording: the first host's file has \(probed.frames) frames, \(probed.width)x\(probed.height)")
        #expect(probed.width == 640 && probed.height == 360 && probed.frames >= 100, "\(probed)")
    }

    /// Two hosts of one App Group started at the same moment, before any
    /// producer: exactly one is refused, naming the other's pid, and the
    /// file it was told to record into is as it was (the other, with no
    /// producer in its 2 s, exits 1 too, saying it recorded nothing).
    @Test func twoHostsStartedAtOnceClaimTheAppGroupOnce() throws {
        let dir = Paths.temporaryDirectory().path
        let earlier = Data((0..<264_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for attempt in 0..<3 {
            let group = uniqueGroup("race\(attempt)")
            let paths = ["a", "b"].map { "\(dir)/\($0)\(attempt).ivf" }
            for path in paths { try earlier.write(to: URL(fileURLWithPath: path)) }
            let hosts = paths.map { Spawned(Paths.executable("frame-relay"), ["--app-group", group.name, "--record", $0, "--duration", "2", "--quiet"]) }
            let statuses = hosts.map { $0.wait(timeout: 20) }
            let refused = try #require(hosts.firstIndex { $0.stderr.contains("is already hosted by pid") }, "neither host was refused: \(statuses) \(hosts.map(\.stderr))")
            let other = 1 - refused
            #expect(statuses == [1, 1] && !hosts[other].stderr.contains("is already hosted"), "\(hosts[other].stderr)")
            #expect(hosts[other].stderr.contains("recorded nothing to \(paths[other])"), "\(hosts[other].stderr)")
            #expect(hosts[refused].stderr.contains("\(group.name) is already hosted by pid \(hosts[other].pid)"), "\(hosts[refused].stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: paths[refused])) == earlier, "the refused host touched \(paths[refused])")
        }
    }

    /// A recording starts at 0 and says how long it is: ffprobe's duration
    /// is within one frame of the frames in it, after a clean stop and after
    /// a `kill -9`.
    @Test(arguments: ["clean", "kill -9"])
    func aRecordingStartsAtZeroAndSaysHowLongItIs(_ end: String) throws {
        let group = uniqueGroup("ivftime")
        let dir = Paths.temporaryDirectory().path
        let recording = dir + "/time.ivf"
        let h = host([group], ["--record", recording, "--frame-rate", "30", "--exit-when-finished"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "4", "--quiet"])
        if end == "clean" {
            #expect(p.wait() == 0 && h.wait() == 0)
        } else {
            #expect(h.waitForLog("first-frame"))
            usleep(2_500_000)
            h.signal(SIGKILL)
            _ = h.wait()
            p.signal(SIGTERM)
            _ = p.wait()
        }
        let probed = try #require(probe(recording))
        print("recording (\(end)): \(probed.frames) frames, ffprobe duration \(probed.duration) s, start \(probed.start) s")
        #expect(probed.start == 0, "starts at \(probed.start) s")
        #expect(probed.frames >= 50 && abs(probed.duration - Double(probed.frames) / 30) <= 1.0 / 30 + 1e-6, "\(probed.frames) frames, duration \(probed.duration) s")
    }
}
