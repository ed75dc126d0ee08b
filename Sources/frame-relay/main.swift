@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayTools

/// frame-relay: the host. It attaches to one or more App Groups' rings and
/// takes every newest frame; each subcommand is one type in its own file,
/// declared once here (the dispatch, `--help`'s list and the line for an
/// unknown name all come from this list).
struct FrameRelay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay", abstract: "the host: encode, stream, record, view, load-test",
        subcommands: [Run.self, Demo.self, Receive.self, LoadTest.self, JanusCommand.self, Subscribe.self, LinkRelayCommand.self],
        defaultSubcommand: Run.self)

    /// With no arguments: the default subcommand on its defaults.
    func run() throws -> Int32 { try Self.dispatch([]) }
}

Signals.resetInherited()
Signals.installHandlers()
runAndExit("frame-relay") {
    let arguments = Array(CommandLine.arguments.dropFirst())
    // `version` as a word too; `--version` is the program's option (``ParsableCommand/dispatch(_:)``).
    if arguments.first == "version" { throw HelpRequested(text: "frame-relay \(FrameRelayVersion.string)") }
    return try FrameRelay.dispatch(arguments)
}
