@preconcurrency import Glibc
import Foundation
import FrameRelayTools

/// Runs named cases and collects their results.
final class BenchmarkRunner {
    let quick: Bool
    let filter: String?
    private(set) var results: [BenchmarkResult] = []

    init(quick: Bool, filter: String?) {
        self.quick = quick
        self.filter = filter
    }

    /// Runs `body` if `name` matches the filter (contains it, or is the
    /// group of a narrower filter such as `content.clip`); it returns its
    /// results, of which only those matching a narrower filter are kept.
    func run(_ name: String, _ body: () throws -> [BenchmarkResult]) rethrows {
        if let filter, !name.contains(filter), !filter.hasPrefix(name + ".") { return }
        FileHandle.standardError.write(Data("running \(name)…\n".utf8))
        let found = try body()
        results += found.filter { result in filter.map { !$0.hasPrefix(name + ".") || result.name.hasPrefix($0) } ?? true }
    }

    /// Whether a case named `name` inside the group being run is wanted (a narrower filter leaves others out).
    func wants(_ name: String) -> Bool {
        guard let filter, filter.contains(".") else { return true }
        return name.hasPrefix(filter) || filter.hasPrefix(name)
    }

    /// The results as a table: name, value (the median over runs) and, after several runs, their range.
    static func table(_ results: [BenchmarkResult]) -> String {
        let width = max(40, results.map(\.name.count).max() ?? 0)
        var lines = ["name".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + "value".leftPad(12) + "  unit"]
        for r in results {
            let range = r.low.flatMap { low in r.high.map { "  [\(String(format: "%.3f", low))…\(String(format: "%.3f", $0))]" } } ?? ""
            lines.append(r.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + String(format: "%.3f", r.value).leftPad(12) + "  " + r.unit + range + (r.extra.map { "  (\($0))" } ?? ""))
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func leftPad(_ length: Int) -> String { count >= length ? self : String(repeating: " ", count: length - count) + self }
}

/// The directory holding this executable and its sibling programs (from
/// /proc: started through PATH, the command line names no directory).
let binaryDirectory: URL = {
    var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &path, path.count - 1)
    let executable = length > 0 ? String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    return URL(fileURLWithPath: executable).deletingLastPathComponent()
}()

/// Starts a sibling executable.
func launch(_ name: String, _ arguments: [String]) throws -> Process {
    let process = Process()
    process.executableURL = binaryDirectory.appendingPathComponent(name)
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}
