@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayHTTP
import FrameRelayJanus
import FrameRelayTools

/// A Janus server of our own (Debian's `janus`): the streaming plugin and
/// the HTTP transport only, from a configuration generated in a temporary
/// folder of our own (`mkdtemp`). ``stop()`` (or `deinit`) ends it and
/// removes the folder; so does its watchdog when this process dies without
/// either (`kill -9`).
final class JanusServer {
    /// Its HTTP API, `http://ADDRESS:PORT/janus`.
    public let url: HTTPClient.URL
    /// Whether its API listens on every interface (it is still reached here through loopback, `url`).
    public let listensEverywhere: Bool

    /// How it is said in a log: its URL here, and where it listens on every
    /// interface, the URL from another machine too.
    public var place: String {
        guard listensEverywhere, let outside = SocketAddress.interfaceIPv4Addresses().first else { return "\(url)" }
        return "\(url) (every interface; from elsewhere http://\(outside):\(url.port)\(url.path))"
    }
    private let process = Process()
    private let directory: URL
    /// A shell that waits on a pipe only this process holds open: at
    /// end-of-file (this process gone, however it ended) it ends Janus and
    /// removes the folder. `PR_SET_PDEATHSIG` cannot do it, since it fires
    /// when the *thread* that started Janus ends, and Dispatch reaps idle threads.
    private let watchdog = Process()
    private var lifeline: FileDescriptor?

    /// Janus's static event loops (its `event_loops`): one a core, shared by
    /// every PeerConnection, instead of a loop and a thread for each.
    static var eventLoops: Int { Processor.onlineCount }

    /// Where Debian installs Janus's plugins (per architecture), if Janus is installed.
    public static var libraryFolder: String? {
        let lib = "/usr/lib"
        let triplets = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return triplets.map { "\(lib)/\($0)/janus" }.first {
            FileManager.default.fileExists(atPath: "\($0)/plugins/libjanus_streaming.so")
                && FileManager.default.fileExists(atPath: "\($0)/transports/libjanus_http.so")
        }
    }

    /// Starts Janus with its HTTP API on `address:port` (a free port when nil)
    /// and waits until it answers; throws a ``JanusError`` with Janus's last
    /// words when it does not start.
    public init(address: String = "127.0.0.1", port: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/janus"), let library = Self.libraryFolder else {
            throw JanusError(url: "janus", code: 0, reason: "Janus is not installed (Debian package janus; scripts/install-deps installs it)")
        }
        guard SocketAddress(ipv4: address, port: 0) != nil else {
            throw UsageError("Janus's address \"\(PeerText.quoted(address, limit: 100))\" is not an IPv4 address (127.0.0.1, or 0.0.0.0 for every one)")
        }
        let port = try port ?? SocketAddress.freeTCPPort(address: address)
        listensEverywhere = address == "0.0.0.0"
        // Listening everywhere, it is reached here through loopback.
        url = HTTPClient.URL("http://\(address == "0.0.0.0" ? "127.0.0.1" : address):\(port)/janus")!
        directory = URL(fileURLWithPath: try PrivateDirectory.make(prefix: "frame-relay-janus"))
        do {
            try write(library: library, address: address, port: port)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/janus")
            process.arguments = ["-C", directory.appendingPathComponent("janus.jcfg").path, "-F", directory.path]
            let log = directory.appendingPathComponent("janus.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = process.standardOutput
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try startWatchdog()
            try waitUntilAnswering(log: log)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Ends Janus (SIGTERM, then SIGKILL after 3 s) and removes its folder.
    public func stop() {
        watchdog.end()
        lifeline = nil
        process.end()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The process id, while it runs.
    public var pid: Int32 { process.processIdentifier }

    /// Whether Janus is still running.
    public var isRunning: Bool { process.isRunning }

    private func startWatchdog() throws {
        let pipe = try FileDescriptor.pipe(name: "janus watchdog")
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        // At end-of-file: SIGTERM, up to 3 s for Janus to go, SIGKILL, the folder.
        watchdog.arguments = [
            // A hang-up (its process group orphaned with the host) must not end it before it has cleaned up.
            "-c", #"trap '' HUP INT; read _; kill -TERM "$1"; for i in $(seq 30); do kill -0 "$1" || break; sleep 0.1; done; kill -KILL "$1"; rm -rf -- "$2""#,
            "janus-watchdog", "\(process.processIdentifier)", directory.path,
        ]
        watchdog.standardInput = FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true)
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        lifeline = FileDescriptor(adopting: pipe.write, name: "janus watchdog")
        try watchdog.run()
    }

    private func waitUntilAnswering(log: URL) throws {
        let deadline = MonotonicClock.now() + 15_000_000_000
        let streaming = JanusStreaming(url: url)
        while MonotonicClock.now() < deadline {
            guard process.isRunning else { break }
            if (try? streaming.ping()) != nil { return }
            usleep(50_000)
        }
        let words = PeerText.quoted(((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(3).joined(separator: " | "))
        throw JanusError(url: url.description, code: 0, reason: "Janus did not start (\(words))")
    }

    private func write(library: String, address: String, port: Int) throws {
        let everyAddress = address == "0.0.0.0"
        let files = [
            "janus.jcfg": """
                general: {
                    configs_folder = \(Self.configString("\(directory.path)"))
                    plugins_folder = \(Self.configString("\(library)/plugins"))
                    transports_folder = \(Self.configString("\(library)/transports"))
                    events_folder = \(Self.configString("\(library)/events"))
                    loggers_folder = \(Self.configString("\(library)/loggers"))
                    debug_level = 3
                    event_loops = \(Self.eventLoops)
                }
                plugins: { disable = "\(try others(in: "\(library)/plugins", keeping: "libjanus_streaming.so"))" }
                transports: { disable = "\(try others(in: "\(library)/transports", keeping: "libjanus_http.so"))" }
                events: { broadcast = false }
                loggers: { disable = "\(try others(in: "\(library)/loggers", keeping: ""))" }
                """,
            "janus.transport.http.jcfg": """
                general: { http = true, port = \(port), https = false\(everyAddress ? "" : ", ip = \"\(address)\"") }
                admin: { admin_http = false }
                """,
            "janus.plugin.streaming.jcfg": "general: { }\n",
        ]
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    /// A string in Janus's configuration (libconfig): quoted, its `\` and `"` escaped.
    static func configString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Every plugin in `folder` but `kept`, as Janus's "disable" list.
    private func others(in folder: String, keeping kept: String) throws -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".so") && $0 != kept }.sorted().joined(separator: ",")
    }
}
