import Foundation
import FrameRelay
import Testing

/// Bad input: one clear line on stderr and a non-zero exit, from both executables.
@Suite struct CLITests {
    static let producerCases: [([String], String)] = [
        (["--app-group", "com.example.app"], "must start with \"group.\""),
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
        (["--bogus"], "unknown option --bogus"),
    ]

    @Test(arguments: producerCases)
    func producerRejects(_ arguments: [String], _ message: String) {
        let result = run(Paths.executable("broadcast-sim"), arguments + ["--app-group", uniqueGroup().name].suffix(arguments.contains("--app-group") ? 0 : 2))
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func producerRejectsAMalformedFile() throws {
        let dir = Paths.temporaryDirectory()
        let path = dir.appendingPathComponent("bad.y4m").path
        try Data("not a video\n".utf8).write(to: URL(fileURLWithPath: path))
        let result = run(Paths.executable("broadcast-sim"), ["--app-group", uniqueGroup().name, "--source", "file", "--file", path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("malformed video file \(path): not a YUV4MPEG2 file"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    static let hostCases: [([String], String)] = [
        (["--app-group", "group..x"], "empty label"),
        (["--app-group", "nogroup"], "must start with \"group.\""),
        (["--max-fps", "0"], "invalid --max-fps"),
        (["--frames", "-3"], "invalid --frames"),
        (["--work-ms", "x"], "invalid --work-ms"),
        (["launch"], "unknown subcommand \"launch\""),
        (["--nope"], "unknown option --nope"),
    ]

    @Test(arguments: hostCases)
    func hostRejects(_ arguments: [String], _ message: String) {
        let result = run(Paths.executable("frame-relay"), arguments)
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func helpListsEveryOptionWithDefaults() {
        let sim = run(Paths.executable("broadcast-sim"), ["--help"])
        #expect(sim.status == 0)
        #expect(sim.stdout.contains("--app-group NAME") && sim.stdout.contains("(default: 1280x720)"))
        let relay = run(Paths.executable("frame-relay"), ["--help"])
        #expect(relay.status == 0 && relay.stdout.contains("--exit-when-finished"))
    }
}
