import Foundation
import FrameRelaySystem
import FrameRelayTools
import FrameRelayTestSupport
import Testing

/// Bad input: one clear line on stderr and a non-zero exit, from both executables.
@Suite struct CLITests {
    static let producerCases: [([String], String)] = [
        (["--content", "desk"], "invalid --content \"desk\": one of still, typing, scrolling, video, drag, mixed"),
        (["--content", "typing", "--source", "x11"], "--content draws the screen itself: not with --source x11"),
        (["--content-start", "10"], "--content-start needs --content MODEL"),
        (["--source", "screencast", "--size", "640x480"], "--size sets the synthetic screen's size: --source screencast has the size of its desktop"),
        (["--cast", "portal"], "--cast is for --source screencast, not --source pattern"),
        (["--source", "screencast", "--pipewire-node", "5", "--surface", "window"], "--surface is for a cast this producer starts, not for --pipewire-node"),
        (["--content", "mixed", "--content-start", "-1"], "--content-start"),
        (["--app-group", "com.example.app"], "must start with \"group.\""),
        (["--file", "/tmp"], "/tmp is a directory, not a video file: give a .y4m file"),
        (["--app-group", "group.bad name"], "is not allowed"),
        (["--size", "0x720"], "width and height must be 1...16383"),
        (["--size", "-5x720"], "width and height must be"),
        (["--size", "20000x720"], "width and height must be 1...16383"),
        (["--size", "big"], "expected WIDTHxHEIGHT"),
        (["--fps", "0"], "invalid --fps \"0\""),
        (["--fps", "abc"], "invalid --fps \"abc\""),
        (["--format", "rgb565"], "invalid --format \"rgb565\""),
        (["--orientation", "sideways"], "invalid --orientation"),
        (["--source", "file", "--file", "/nonexistent/clip.y4m"], "cannot open /nonexistent/clip.y4m"),
        (["--source", "file"], "--source file needs --file"),
        (["--source", "x11", "--display", ":987"], "cannot connect to display :987"),
        (["--preset", "iphone-99"], "unknown --preset"),
        (["--pause", "soon"], "invalid --pause"),
        (["--pause", "0.01:inf"], "invalid --pause \"0.01:inf\""),
        (["--switch", "1:64x64:bgra:up:junk"], "invalid --switch"),
        (["--size", "100x100", "--preset", "iphone-se"], "--size and --preset both set the picture size"),
        (["--file", "clip.y4m", "--source", "pattern"], "--file is for --source file"),
        (["--checksum=yes"], "--checksum takes no value"),
        (["--report", "/nonexistent/r.json"], "cannot write --report /nonexistent/r.json: no directory /nonexistent"),
        (["--report", "/tmp"], "cannot write --report /tmp: it is a directory"),
        (["--bogus"], "unknown option --bogus (see --help)"),
        (["--fsp", "30"], "unknown option --fsp: did you mean --fps?"),
        (["-size", "64x64"], "unknown option -size: did you mean --size?"),
        (["--fps", "--size=64x64"], "--fps needs a value N (it is followed by --size)"),
    ]

    @Test(arguments: producerCases)
    func producerRejects(_ arguments: [String], _ message: String) {
        let result = run(Paths.executable("broadcast-sim"), arguments + ["--app-group", uniqueGroup().name].suffix(arguments.contains("--app-group") ? 0 : 2))
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    static let malformedFiles: [(String, String)] = [
        ("not a video\n", "not a YUV4MPEG2 file"),
        ("YUV4MPEG2 W64 H64 F30:1 C420p10\n", "colour space C420p10, only 8-bit 4:2:0 is supported"),
        ("YUV4MPEG2 W64 H64 F30:1 C420jpeg\n", "no whole 64x64 frame after the header"),
        ("YUV4MPEG2 W64 H64 F0:1\n", "frame rate F0:1"),
        ("YUV4MPEG2 W64 H64 F30:0\n", "frame rate F30:0"),
        ("YUV4MPEG2 W64 H64 F1000000:1\n", "frame rate F1000000:1"),
        ("YUV4MPEG2 W64 H64 F30:1\nFRAME\n" + String(repeating: "x", count: 100), "no whole 64x64 frame after the header"),
    ]

    /// The shared clip as it comes (xz-packed): the line says how to unpack it.
    @Test func aPackedClipIsNamedWithHowToUnpackIt() {
        let group = uniqueGroup()
        let result = run(Paths.executable("broadcast-sim"), ["--app-group", group.name, "--file", Paths.clipXZ])
        #expect(result.status == 1 && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("it is xz-compressed, not a YUV4MPEG2 file: unpack it first (xz -dc \(Paths.clipXZ) > desktop-720p30.y4m)"), "\(result.stderr)")
        #expect(!segmentExists(group))
    }

    @Test(arguments: malformedFiles)
    func producerRejectsAMalformedFile(_ contents: String, _ message: String) throws {
        let dir = Paths.temporaryDirectory()
        let path = dir.appendingPathComponent("bad.y4m").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        let group = uniqueGroup()
        let result = run(Paths.executable("broadcast-sim"), ["--app-group", group.name, "--file", path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("malformed video file \(path): \(message)"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(!segmentExists(group))
    }

    static let hostCases: [([String], String)] = [
        (["--app-group", "group..x"], "empty label"),
        (["--app-group", "nogroup"], "must start with \"group.\""),
        (["--max-fps", "0"], "invalid --max-fps"),
        (["--frames", "-3"], "invalid --frames"),
        (["--work-ms", "x"], "invalid --work-ms"),
        (["launch"], "unknown subcommand \"launch\": run, demo"),
        (["load-tset"], "unknown subcommand \"load-tset\": did you mean load-test? run, demo"),
        (["--nope"], "unknown option --nope (see --help)"),
        (["--bitrat", "900"], "unknown option --bitrat: did you mean --bitrate?"),
        (["-http", "8080"], "unknown option -http: did you mean --http?"),
        (["load-test", "--sesions", "2"], "unknown option --sesions: did you mean --sessions?"),
        (["--no-encode=false"], "--no-encode takes no value"),
        (["--no-encode", "--bitrate", "0"], "--bitrate needs encoding"),
        (["--packet-size", "10"], "--packet-size needs --rtp"),
        (["--janus", "http://127.0.0.1:9/janus", "--layers", "0"], "invalid --layers \"0\": expected a whole number in 1...3"),
        (["--janus", "http://127.0.0.1:9/janus", "--layers", "4"], "invalid --layers \"4\""),
        (["--janus", "http://127.0.0.1:9/janus", "--layers", "--duration", "3"], "--layers needs a value N (it is followed by --duration)"),
        (["--janus", "http://127.0.0.1:9/janus", "--bitrate", "100", "--layers", "3"], "layer bitrates 25,50,100 kbit/s: each of several layers needs at least 150"),
        (["--janus", "http://127.0.0.1:9/janus", "--layer-bitrates", "100,900"], "layer bitrates 100,900 kbit/s"),
        (["--app-group", "group.t.a", "--app-group", "group.t.b", "--rtp", "127.0.0.1:65533"], "2 shares need ports 65533...65536, past 65535"),
        (["--app-group", "group.t.a", "--app-group", "group.t.b", "--record", "/tmp/same.ivf", "--record", "/tmp/same.ivf"], "give each output its own file"),
        (["--report", "/nonexistent/r.json"], "cannot write --report /nonexistent/r.json: no directory /nonexistent"),
        (["--record", "/tmp"], "cannot write --record /tmp: it is a directory"),
        (["--trace", "/proc/self/mem"], "cannot write --trace /proc/self/mem: it is a kernel file in /proc or /sys"),
        (["--record", "/dev/zero"], "cannot write --record /dev/zero: it is a device, not a file"),
        (["--report", "/sys/kernel/frame-relay.json"], "cannot write --report /sys/kernel/frame-relay.json: /sys/kernel is in /proc or /sys"),
        (["receive", "--address", "999.0.0.1"], "invalid --address \"999.0.0.1\""),
        (["receive", "--idle", "0"], "invalid --idle \"0\""),
        (["demo", "--fps", "0"], "invalid --fps \"0\""),
        (["demo", "--layer-bitrates", "300,900"], "--layer-bitrates needs --janus"),
        (["demo", "--janus", "--layer-bitrates", "100,900"], "layer bitrates 100,900 kbit/s"),
        (["demo", "--janus", "--layer-bitrates", "300,900", "--bitrate", "900"], "--layer-bitrates sets the top layer's bitrate too"),
        (["demo", "--surface", "window"], "--surface is for --source screencast, not --source pattern"),
        (["demo", "--source", "x11", "--size", "640x480"], "--size is the synthetic screen's"),
        (["demo", "--source", "x11", "--content", "typing"], "--content is the synthetic screen's: --source x11 shows its desktop"),
        (["demo", "--content", "typng"], "invalid --content \"typng\": pattern or one of still, typing"),
        (["load-test", "--html", "/nonexistent/x.html"], "cannot write --html /nonexistent/x.html"),
        (["load-test", "--retries", "2"], "--retries needs --ramp"),
        (["load-test", "--janus", "http://127.0.0.1:1/janus", "--layers", "2", "--size", "100x100"], "--layers 2: 2 layers need a picture at least 128x128"),
        (["load-test", "--janus", "http://127.0.0.1:1/janus", "--layers", "3", "--bitrate", "100"], "--layers 3: layer bitrates 25,50,100 kbit/s: each of several layers needs at least 150"),
        (["load-test", "--warm-up", "4.5", "--duration", "5"], "--warm-up 4.5 s leaves nothing of a 5.0 s step after its last share starts"),
        (["load-test", "--content", "desk"], "invalid --content \"desk\": pattern or one of still, typing"),
        (["subscribe", "--janus", "http://127.0.0.1:9/janus", "--mountpoint", "18446744073709551615"], "--mountpoint 18446744073709551615: Janus's ids go up to 9223372036854775807"),
        (["subscribe", "--janus", "http://127.0.0.1:9/janus", "--mountpoint", "1", "--captures", "/tmp"], "--captures /tmp is a directory: give the host's --trace file"),
        (["subscribe", "--janus", "http://127.0.0.1:9/janus", "--mountpoint", "1", "--captures", "/etc/passwd"], "--captures /etc/passwd: line 1 is not a trace record"),
        // What was typed reaches the terminal with its control characters written out.
        (["subscribe", "--janus", "http://127.0.0.1:9/janus", "--mountpoint", "1", "--link", "loss=\u{1b}[31m"], #"loss "\u{1b}[31m" is not a percentage"#),
        // So do the marks that would turn it around, and a name of any length is cut.
        (["-\u{202E}http"], #"unexpected argument "-\u{202e}http""#),
        (["--" + String(repeating: "x", count: 100_000)], "unknown option --" + String(repeating: "x", count: 64) + "… (see --help)"),
        (["--", "--bitrate", "5"], "unexpected argument \"--\""),
        (["help", "load-test", "extra"], "unexpected argument \"extra\" after help load-test"),
        (["load-test", "--app-groups", "group." + String(repeating: "a", count: 200)], "invalid --app-groups: 206 characters, at most 195"),
    ]

    @Test(arguments: hostCases)
    func hostRejects(_ arguments: [String], _ message: String) {
        let result = run(Paths.executable("frame-relay"), arguments)
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// Devices and kernel files are refused, but /dev/null and standard output still take output.
    @Test func nullAndStandardOutputStillTakeOutput() {
        for path in ["/dev/null", "/dev/stdout"] {
            let result = run(Paths.executable("frame-relay"), ["--report", path, "--no-encode", "--duration", "0.2", "--quiet"])
            #expect(result.status == 0, "\(path): \(result.stderr)")
        }
    }

    @Test func helpListsEveryOptionWithDefaults() {
        let sim = run(Paths.executable("broadcast-sim"), ["--help"])
        #expect(sim.status == 0)
        #expect(sim.stdout.contains("--app-group NAME") && sim.stdout.contains("(default: 1280x720)"))
        let relay = run(Paths.executable("frame-relay"), ["--help"])
        #expect(relay.status == 0 && relay.stdout.contains("--exit-when-finished"))
    }

    /// `frame-relay help SUBCOMMAND` is that subcommand's help.
    @Test func helpNamedForASubcommandIsItsHelp() {
        let help = run(Paths.executable("frame-relay"), ["help", "load-test"])
        #expect(help.status == 0 && help.stdout.hasPrefix("frame-relay load-test: many shares at once") && help.stdout.contains("--viewer-link SPEC"), "\(help.stdout)")
        for same in [["help", "help"], ["help", "--help"]] {
            let general = run(Paths.executable("frame-relay"), same)
            #expect(general.status == 0 && general.stdout.contains("Subcommands"), "\(same): \(general.stderr)")
        }
        let unknown = run(Paths.executable("frame-relay"), ["help", "subscibe"])
        #expect(unknown.status == 1 && unknown.stderr.contains("did you mean subscribe?"), "\(unknown.stderr)")
    }

    @Test func helpNamesTheSubcommandsFitsEightyColumnsAndVersionAnswers() {
        let help = run(Paths.executable("frame-relay"), ["--help"])
        for subcommand in ["demo", "receive", "load-test", "janus", "help"] {
            #expect(help.stdout.contains("\n  \(subcommand) "), "--help does not list \(subcommand)")
        }
        #expect(run(Paths.executable("frame-relay"), ["help"]).stdout == help.stdout)
        for arguments in [["--help"], ["demo", "--help"], ["receive", "--help"], ["load-test", "--help"], ["janus", "--help"]] {
            let text = run(Paths.executable("frame-relay"), arguments).stdout
            let wide = text.split(separator: "\n").filter { $0.count > 80 }
            #expect(wide.isEmpty, "\(arguments): \(wide)")
        }
        let simHelp = run(Paths.executable("broadcast-sim"), ["--help"]).stdout
        let wide = simHelp.split(separator: "\n").filter { $0.count > 80 }
        #expect(wide.isEmpty, "broadcast-sim: \(wide)")
        // Each program's --version is an option listed once, right after --help (not among the subcommands); a subcommand has none.
        for (program, text) in [("frame-relay", help.stdout), ("broadcast-sim", simHelp)] {
            #expect(text.contains("  --help                      Show this help.\n  --version                   Print the version.\n")
                        && text.components(separatedBy: "--version").count == 2, "\(program): \(text)")
        }
        #expect(!run(Paths.executable("frame-relay"), ["demo", "--help"]).stdout.contains("--version"))
        let version = run(Paths.executable("frame-relay"), ["--version"])
        #expect(version.status == 0 && version.stdout == "frame-relay \(FrameRelayVersion.string)\n")
        let simVersion = run(Paths.executable("broadcast-sim"), ["--version"])
        #expect(simVersion.status == 0 && simVersion.stdout == "broadcast-sim \(FrameRelayVersion.string)\n")
        // As an option, --version answers wherever the help lists it, after other options too.
        #expect(run(Paths.executable("frame-relay"), ["--quiet", "--version"]).stdout == version.stdout)
        #expect(run(Paths.executable("broadcast-sim"), ["--fps", "30", "--version"]).stdout == simVersion.stdout)
    }

    /// Off a terminal (a CI log) the status comes as a plain line every 2 s.
    @Test func statusComesAsPlainLinesInAPipe() {
        let group = uniqueGroup("plain")
        let result = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--no-encode", "--duration", "4.5"])
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("frame-relay: \(group.name)  waiting for producer  dropped 0  taken 0  invalid 0  capture→taken p50 – p99 –  hand-off p99 –") }
        #expect(result.status == 0 && (2...3).contains(lines.count), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}["), "no terminal escapes in a log")
    }

    /// On an 80-column terminal every status line fits, most useful figures first.
    @Test func statusLineFitsAnEightyColumnTerminal() {
        let group = uniqueGroup("eighty")
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "4", "--quiet"])
        let command = "stty cols 80 rows 24; exec \(Paths.executable("frame-relay")) --app-group \(group.name) --duration 3 --bitrate 500"
        let result = run("/usr/bin/script", ["-qec", command, "/dev/null"], timeout: 30)
        _ = p.wait(timeout: 30)
        // The pty's output, escapes taken out: every drawn status line within 79 columns.
        var text = result.stdout
        for escape in ["\u{1B}[2K", "\r"] { text = text.replacingOccurrences(of: escape, with: "") }
        text = text.replacingOccurrences(of: "\u{1B}\\[[0-9]+A", with: "", options: .regularExpression)
        let shortName = "…" + String(group.name.suffix(14))
        let status = text.split(separator: "\n").filter { $0.hasPrefix(shortName) && $0.contains(" fps  dropped ") }
        #expect(status.count >= 5, "\(text)")
        #expect(status.allSatisfy { $0.count <= 79 }, "\(status.map(\.count))")
        // Frames/s, dropped and capture→encoded p50 and p99 show at 80 columns.
        #expect(status.contains { $0.contains(" fps  dropped ") && $0.contains("  capture→encoded p50 ") && $0.contains(" p99 ") && $0.hasSuffix(" ms") || $0.contains(" ms  ") }, "\(status)")
        #expect(status.allSatisfy { $0.contains("capture→encoded p50 ") }, "\(status)")
    }

    /// An App Group spelt differently on one side: the host names the ring
    /// that is there (with a guess), the producer says nobody takes its frames.
    @Test func aMisspeltAppGroupIsNamedOnBothSides() {
        let group = uniqueGroup("nearname")
        let misspelt = String(group.name.dropLast())
        let p = producer(group, ["--size", "160x120", "--fps", "15", "--duration", "5"])
        usleep(300_000)
        let h = run(Paths.executable("frame-relay"), ["--app-group", misspelt, "--no-encode", "--duration", "4"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.stderr.contains("frame-relay: \(misspelt): no producer yet; rings for other App Groups here: ") && h.stderr.contains("did you mean \(group.name)?"), "\(h.stderr)")
        #expect(p.stderr.contains("broadcast-sim: no host has taken a frame from \(group.name) in 3 s: is frame-relay running with --app-group \(group.name)?"), "\(p.stderr)")
    }

    /// --quiet silences progress, not mistakes: a quiet host on a misspelt
    /// App Group still names the ring that is there, and a run that
    /// recorded and streamed nothing of what was asked says so and exits 1.
    @Test func aQuietHostStillSaysWhatWentWrongAndFailsWhenItDeliveredNothing() {
        let group = uniqueGroup("quietname")
        let misspelt = String(group.name.dropLast())
        let recording = Paths.temporaryDirectory().appendingPathComponent("nothing.ivf").path
        let p = producer(group, ["--size", "160x120", "--fps", "15", "--duration", "6", "--quiet"])
        usleep(300_000)
        let h = run(Paths.executable("frame-relay"), ["--app-group", misspelt, "--quiet", "--duration", "4", "--record", recording, "--rtp", "127.0.0.1:9"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.status == 1, "\(h.stderr)")
        let lines = h.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && !FileManager.default.fileExists(atPath: recording), "\(h.stderr)")
        #expect(lines.first?.hasSuffix("did you mean \(group.name)?") == true, "\(h.stderr)")
        let why = "(no producer attached: is broadcast-sim running with this --app-group?)"
        #expect(lines.contains("frame-relay: error: \(misspelt): recorded nothing to \(recording) \(why); no file left") && lines.contains("frame-relay: error: \(misspelt): streamed nothing \(why)"), "\(h.stderr)")
    }

    /// The host says where its time goes when it drops frames, how many
    /// checksums it verified, and that the producer finished (not "0.0 fps").
    @Test func theHostNamesItsBottleneckItsVerifiedFramesAndAFinishedProducer() {
        let group = uniqueGroup("bottleneck")
        let h = host([group], ["--verify", "--work-ms", "100", "--duration", "6"])
        let p = producer(group, ["--size", "160x120", "--fps", "30", "--frames", "120", "--checksum", "--quiet"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.wait(timeout: 30) == 0, "\(h.stderr)")
        #expect(h.stderr.contains("% of frames dropped (the newest wins): the host takes "), "\(h.stderr)")
        #expect(h.stderr.contains("per frame: convert p50"), "\(h.stderr)")
        let summary = h.stderr.split(separator: "\n").first { $0.hasPrefix("frame-relay: summary: ") } ?? ""
        #expect(summary.contains("producer finished") && summary.contains("checksums verified "), "\(summary)")
    }

    /// A host that comes after its producer finds the frames written before
    /// it replaced (the ring's dropped count says so), but names no
    /// bottleneck for them: it keeps up with every frame since it came.
    /// Counted from the producer's start, 0.3 s of frames dropped read as
    /// "10 % of frames dropped: the host takes 29.9 frames/s of the producer's 33.2".
    @Test func framesWrittenBeforeTheHostCameAreNoBottleneck() throws {
        let group = uniqueGroup("late-host")
        let p = producer(group, ["--size", "160x120", "--fps", "30", "--duration", "6", "--quiet"])
        usleep(1_000_000)
        let h = host([group], ["--no-encode", "--exit-when-finished"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.wait(timeout: 30) == 0, "\(h.stderr)")
        let summary = h.stderr.split(separator: "\n").first { $0.hasPrefix("frame-relay: summary: ") } ?? ""
        #expect(!summary.contains("dropped 0 "), "\(summary)")
        #expect(!h.stderr.contains("% of frames dropped"), "\(h.stderr)")
    }

    /// While its producer is paused (it sends nothing), the host's status
    /// line says so rather than "0.0 fps", and says frames/s again once it resumes.
    @Test func theStatusLineSaysWhenTheProducerIsPaused() throws {
        let group = uniqueGroup("paused")
        let h = host([group], ["--exit-when-finished", "--no-encode"])
        try #require(h.waitForLog("waiting for frames"), "host: \(h.stderr)")
        let p = producer(group, ["--size", "160x120", "--fps", "30", "--duration", "7", "--pause", "1:4", "--quiet"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.wait(timeout: 30) == 0, "\(h.stderr)")
        let states = h.stderr.split(separator: "\n").filter { $0.contains(" dropped ") && !$0.contains("summary:") }
            .map { $0.contains("producer paused") ? "paused" : $0.contains(" fps ") ? "fps" : "other" }
        #expect(states.contains("paused") && states.drop(while: { $0 != "paused" }).contains("fps"), "\(h.stderr)")
    }

    /// A producer killed (kill -9): the status line says it is gone rather
    /// than "0.0 fps" until a producer attaches again.
    @Test func theStatusLineSaysWhenTheProducerIsGone() throws {
        let group = uniqueGroup("gone")
        let h = host([group], ["--no-encode", "--duration", "7"])
        try #require(h.waitForLog("waiting for frames"), "host: \(h.stderr)")
        let p = producer(group, ["--size", "160x120", "--fps", "30", "--duration", "20", "--quiet"])
        try #require(h.waitForLog("first-frame"), "host: \(h.stderr)")
        p.signal(SIGKILL)
        _ = p.wait(timeout: 10)
        #expect(h.wait(timeout: 30) == 0, "\(h.stderr)")
        let states = h.stderr.split(separator: "\n").filter { $0.contains(" dropped ") && !$0.contains("summary:") }
        #expect(h.stderr.contains("is gone; waiting for a new producer") && states.last?.contains("  producer gone  ") == true, "\(h.stderr)")
    }

    /// A CI job whose host saw no frames fails, in one line that says why.
    @Test func aRunThatMovedNothingFailsWithExpectFrames() {
        let group = uniqueGroup("expect")
        let nothing = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--no-encode", "--duration", "1", "--expect-frames", "1", "--quiet"])
        #expect(nothing.status == 1)
        #expect(nothing.stderr == "frame-relay: error: \(group.name) took 0 frames, fewer than --expect-frames 1 (no producer attached: is broadcast-sim running with this --app-group?)\n")
        let h = host([group], ["--no-encode", "--exit-when-finished", "--expect-frames", "20", "--quiet"])
        let p = producer(group, ["--frames", "30", "--fps", "60", "--size", "160x120", "--quiet"])
        #expect(p.wait(timeout: 30) == 0)
        #expect(h.wait(timeout: 30) == 0, "\(h.stderr)")
    }

    /// An output that is a FIFO nobody reads fails at once rather than blocking where no signal reaches.
    @Test func aFIFOWithoutReaderFailsAtOnce() throws {
        let fifo = Paths.temporaryDirectory().appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o644) == 0)
        for (command, arguments) in [("frame-relay", ["--record", fifo, "--duration", "1"]), ("broadcast-sim", ["--app-group", uniqueGroup().name, "--frames", "1", "--report", fifo])] {
            let result = run(Paths.executable(command), arguments, timeout: 10)
            #expect(result.status == 1, "\(command): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("no process is reading this FIFO") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    /// Outputs are written in place: through a symlink to its target, which stays a symlink.
    @Test func anOutputThroughASymlinkWritesItsTarget() throws {
        let dir = Paths.temporaryDirectory()
        let target = dir.appendingPathComponent("target.json").path, link = dir.appendingPathComponent("link.json").path
        #expect(symlink(target, link) == 0)
        let result = run(Paths.executable("broadcast-sim"), ["--app-group", uniqueGroup().name, "--frames", "3", "--report", link, "--quiet"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target)
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("\"frames\":3"))
    }
}
