@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayHost
import Testing

/// The package's root and its built executables.
public enum Paths {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The executables under test: the debug build's, or those in
    /// `FRAME_RELAY_BIN_DIR` (scripts/sanitize points it at a sanitized build).
    public static func executable(_ name: String) -> String {
        if let directory = ProcessInfo.processInfo.environment["FRAME_RELAY_BIN_DIR"] {
            return URL(fileURLWithPath: directory, relativeTo: root).appendingPathComponent(name).path
        }
        return root.appendingPathComponent(".build/debug/\(name)").path
    }
    public static let clipXZ = root.deletingLastPathComponent().appendingPathComponent("shared/clips/desktop-720p30.y4m.xz").path

    /// A fresh temporary folder, inside this test process's own folder,
    /// which goes when the process exits.
    public static func temporaryDirectory() -> URL {
        let url = testsFolder.appendingPathComponent(String(UUID().uuidString.prefix(8)))
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `/tmp/frame-relay-tests-PID`: removed at exit, and the folders of
    /// earlier test processes that are gone (killed) with it made.
    private static let testsFolder: URL = {
        let tmp = FileManager.default.temporaryDirectory
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? [] where name.hasPrefix("frame-relay-tests-") {
            let pid = Int32(name.dropFirst("frame-relay-tests-".count))
            if pid.map({ kill($0, 0) != 0 && errno == ESRCH }) ?? true { try? FileManager.default.removeItem(at: tmp.appendingPathComponent(name)) }
        }
        let url = tmp.appendingPathComponent("frame-relay-tests-\(getpid())")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: FileManager.default.temporaryDirectory.appendingPathComponent("frame-relay-tests-\(getpid())").path) }
        return url
    }()

    /// The shared desktop clip, decompressed once per test process. Without
    /// it (a clone with no `../shared` beside it) each test that needs it
    /// fails saying where it looked, and the others run on.
    public static func clip() throws -> String { try decompressedClip.get() }

    public struct ClipMissing: Error, CustomStringConvertible {
        public let description: String
    }

    private static let decompressedClip: Result<String, ClipMissing> = {
        guard FileManager.default.fileExists(atPath: clipXZ) else {
            return .failure(ClipMissing(description: "the shared desktop clip is not at \(clipXZ): the tests expect the project's shared/ folder beside the checkout"))
        }
        let out = temporaryDirectory().appendingPathComponent("desktop-720p30.y4m").path
        let result = run("/bin/sh", ["-c", "xz -dc '\(clipXZ)' > '\(out)'"])
        guard result.status == 0 else { return .failure(ClipMissing(description: "xz could not decompress \(clipXZ): \(result.stderr)")) }
        return .success(out)
    }()
}

/// A unique App Group per test, so tests never share a ring.
public func uniqueGroup(_ tag: String = "t") -> AppGroup {
    try! AppGroup("group.test.framerelay.\(tag).p\(getpid()).n\(UInt32.random(in: 0...UInt32.max))")
}

/// Whether the App Group's segment exists in /dev/shm.
public func segmentExists(_ group: AppGroup) -> Bool {
    FileManager.default.fileExists(atPath: "/dev/shm" + group.sharedMemoryName)
}

/// Calls `body` with 127.0.0.1:`port` as a socket address and its length.
public func withLoopback<R>(_ port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
}

/// Runs a command to completion.
@discardableResult
public func run(_ path: String, _ arguments: [String], timeout: Double = 60) -> (status: Int32, stdout: String, stderr: String) {
    let process = Spawned(path, arguments)
    let status = process.wait(timeout: timeout)
    return (status, process.stdout, process.stderr)
}

/// A child process whose output goes to files that the test can read while it runs.
public final class Spawned {
    public let process = Process()
    private let outURL: URL
    private let errURL: URL
    public let startTime = MonotonicClock.now()

    public init(_ path: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil) {
        let dir = FileManager.default.temporaryDirectory
        let id = UUID().uuidString.prefix(8)
        outURL = dir.appendingPathComponent("spawn-\(id).out")
        errURL = dir.appendingPathComponent("spawn-\(id).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardOutput = try! FileHandle(forWritingTo: outURL)
        process.standardError = try! FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        // Test threads (Dispatch workers) block every signal, and a child
        // inherits the mask: unblock while spawning so SIGINT and SIGTERM reach it.
        var empty = sigset_t(), saved = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try! process.run()
    }

    deinit {
        // A test that failed half-way: ask first (a producer then removes its ring); wait(timeout:) insists after 3 s.
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            _ = wait(timeout: 3)
        }
        try? FileManager.default.removeItem(at: outURL)
        try? FileManager.default.removeItem(at: errURL)
    }

    public var pid: Int32 { process.processIdentifier }
    public var stdout: String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// Waits until stderr contains `text` `count` times; false on timeout or exit.
    public func waitForLog(_ text: String, count: Int = 1, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.components(separatedBy: text).count - 1 >= count { return true }
            if !process.isRunning { return stderr.components(separatedBy: text).count - 1 >= count }
            usleep(20_000)
        }
        return false
    }

    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for exit; kills it (and returns -9) after `timeout` seconds.
    public func wait(timeout: Double = 60) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -9
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// broadcast-sim with arguments.
public func producer(_ group: AppGroup, _ arguments: [String]) -> Spawned {
    Spawned(Paths.executable("broadcast-sim"), ["--app-group", group.name] + arguments)
}

/// frame-relay with arguments.
public func host(_ groups: [AppGroup], _ arguments: [String]) -> Spawned {
    Spawned(Paths.executable("frame-relay"), groups.flatMap { ["--app-group", $0.name] } + arguments)
}

/// A host recording a fresh App Group into `name` in a folder of its own,
/// and a producer with `arguments`, once the host has taken a first frame.
public func recordingShare(_ tag: String, name: String, producer arguments: [String]) -> (group: AppGroup, recording: String, host: Spawned, producer: Spawned) {
    let group = uniqueGroup(tag)
    let recording = Paths.temporaryDirectory().appendingPathComponent(name).path
    let h = host([group], ["--record", recording])
    let p = producer(group, arguments)
    #expect(h.waitForLog("first-frame"), "\(h.stderr)")
    return (group, recording, h, p)
}

/// The JSON object in a file.
public func readJSON(_ path: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
}

/// The host's per-share statistics from `--report`.
public func readShareStats(_ path: String) throws -> [ShareStats] {
    try JSONDecoder().decode([ShareStats].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
}
