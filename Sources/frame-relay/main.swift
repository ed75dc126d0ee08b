@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayTools

/// frame-relay: the host. It attaches to one or more App Groups' rings and
/// takes every newest frame; each subcommand is one type (Run, Demo,
/// Receive, LoadTest, JanusCommand) in its own file.

/// The subcommands, as `frame-relay --help` and `frame-relay help` list them.
let subcommandList = """
    Subcommands (frame-relay SUBCOMMAND --help for each):
      run (default)   attach to App Group rings; encode, stream, record, view
      demo            a producer and this host on built-in defaults
      receive         receive our RTP, decode it, measure glass-to-glass
      load-test       many shares at once: drops, fps, latency, CPU
      janus           run a Janus of our own for --janus (tests, demos)
      subscribe       WebRTC viewers of a Janus mountpoint, counted without decoding
      link-relay      an impaired UDP link between a browser and Janus
      help            this help
      --version       print the version
    """

func runCommand() throws -> Int32 {
    let subcommands: [String: any ParsableCommand.Type] = [
        "run": Run.self, "demo": Demo.self, "receive": Receive.self, "load-test": LoadTest.self, "janus": JanusCommand.self,
        "subscribe": Subscribe.self, "link-relay": LinkRelayCommand.self,
    ]
    var arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "--version" || arguments.first == "version" {
        print("frame-relay \(FrameRelayVersion.string)")
        return 0
    }
    let name = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "run"
    if !arguments.isEmpty, !arguments[0].hasPrefix("-") { arguments.removeFirst() }
    /// A subcommand by name, or one line saying which names there are (and the nearest).
    func command(_ name: String) throws -> any ParsableCommand.Type {
        guard let command = subcommands[name] else {
            let guess = EditDistance.nearest(to: name, among: Array(subcommands.keys) + ["help"]).map { "did you mean \($0)? " } ?? ""
            throw UsageError("unknown subcommand \"\(PeerText.quoted(name, limit: 64))\": \(guess)run, demo, receive, load-test, janus, subscribe, link-relay, help (see --help)")
        }
        return command
    }
    if name == "help" {
        // `help SUBCOMMAND`: that one's help (`help`, `help help` and `help --help`: the whole program's).
        guard arguments.count <= 1 else { throw UsageError("unexpected argument \"\(PeerText.quoted(arguments[1], limit: 64))\" after help \(PeerText.quoted(arguments[0], limit: 64))") }
        let topic = arguments.first.flatMap { ["help", "--help", "-h"].contains($0) ? nil : $0 }
        print(try topic.map { try command($0).helpText } ?? Run.helpText)
        return 0
    }
    return try command(name).parse(arguments).run()
}

Signals.resetInherited()
Signals.installHandlers()
runAndExit("frame-relay", runCommand)
