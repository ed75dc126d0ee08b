@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayHTTP
import FrameRelayTools
import FrameRelayProducer

/// What the subcommands share: the log line, output checks, listen
/// addresses, the screen's content, and finding the package's other executables.

/// One line on stderr; a closed stderr (`frame-relay … 2>&1 | head -1`) loses it
/// quietly (FileHandle's write trapped there: SIGILL).
func log(_ message: String) {
    writeStandardError("frame-relay: \(message)\n")
}

/// Checks every output file the options name (see ``OutputFile/check(_:option:)``),
/// and that no file is named twice.
func checkOutputs(_ outputs: [(option: String, paths: [String])]) throws {
    var seen: [String: String] = [:]
    for (option, paths) in outputs {
        for path in paths {
            try OutputFile.check(path, option: option)
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR { continue }  // /dev/null takes any number
            let key = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            if let earlier = seen[key] { throw UsageError("\(path) is named by --\(earlier) and --\(option): give each output its own file") }
            seen[key] = option
        }
    }
}

/// `--content MODEL`'s help: what a synthetic screen shows.
let contentHelp = "pattern (a window moving every frame: the worst case) or a content model, "
    + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", ") + " (mixed: a scripted minute of real use)."

/// `--content MODEL`: `pattern` or a ``ContentScreen/Content`` (broadcast-sim's `--content`).
func parseContent(_ text: String) throws -> String {
    guard text == "pattern" || ContentScreen.Content(rawValue: text) != nil else {
        throw UsageError("invalid --content \"\(text)\": pattern or one of " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", "))
    }
    return text
}

/// Parses `PORT` or `ADDRESS:PORT` for a listening socket (loopback by default).
func parseListenAddress(_ text: String) throws -> ListenAddress {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    let address = parts.count == 2 ? String(parts[0]) : "127.0.0.1"
    guard parts.count <= 2, let port = Int(parts.last ?? ""), (1...65535).contains(port) else {
        throw UsageError("invalid --http \"\(text)\": expected PORT or ADDRESS:PORT with a port in 1...65535")
    }
    return ListenAddress(address: address.isEmpty ? "127.0.0.1" : address, port: port)
}

/// Another of this package's executables, from the directory this one was started from.
func siblingExecutable(_ name: String) throws -> URL {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let me = length > 0 ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    let url = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent(name)
    guard access(url.path, X_OK) == 0 else { throw UsageError("\(name) not found next to frame-relay (\(url.path)); build the package first") }
    return url
}

extension Process {
    /// Ends the process: SIGTERM, then SIGKILL if it is still there after
    /// `grace` seconds (stopped with SIGSTOP, or ignoring SIGTERM), and waits for it.
    func end(grace: Double = 3) { Self.end([self], grace: grace) }

    /// How a process had to be ended by ``end(_:grace:)``.
    enum Ending: Equatable {
        /// It ended on its own or at SIGTERM.
        case ended
        /// It was still there after the grace (stopped, when it was: SIGSTOP), and got SIGKILL.
        case killed(stopped: Bool)
    }

    /// Ends every process started of `processes` at once: SIGTERM to each,
    /// then SIGKILL to those still there after `grace` seconds, and waits for
    /// them all; `grace` bounds the whole, however many are stopped. Says,
    /// for each, whether it had to be killed.
    @discardableResult
    static func end(_ processes: [Process], grace: Double = 3) -> [Ending] {
        let started = processes.filter { $0.processIdentifier != 0 }
        for process in started where process.isRunning { process.terminate() }
        let deadline = MonotonicClock.now() + UInt64(grace * 1e9)
        while started.contains(where: \.isRunning), MonotonicClock.now() < deadline { usleep(10_000) }
        let endings = processes.map { process -> Ending in
            guard process.processIdentifier != 0, process.isRunning else { return .ended }
            let stopped = Processor.isStopped(process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            return .killed(stopped: stopped)
        }
        for process in started { process.waitUntilExit() }
        return endings
    }

    /// How it ended, in words: "exit status N" or "killed by signal N".
    var endedAs: String {
        terminationReason == .uncaughtSignal ? "killed by signal \(terminationStatus)" : "exit status \(terminationStatus)"
    }
}
