import Foundation
import FrameRelayTestSupport
import Testing

/// What a newcomer reads: every relative link resolves, and the README
/// stays what a user does (the measurements live in docs/).
@Suite struct DocumentationTests {
    @Test func everyRelativeLinkResolves() {
        let result = run("/usr/bin/python3", [Paths.root.appendingPathComponent("scripts/check-links").path])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func theREADMEStaysShort() throws {
        let text = try String(contentsOf: Paths.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
        #expect(lines <= 300, "README.md has \(lines) lines: move measurements and detail to docs/")
    }

    /// scripts/check-readme runs a block's commands as written: a `#`
    /// inside quotes is no comment, and a block that fails has its
    /// background jobs ended (nothing of it runs on).
    @Test func blocksRunAsWrittenAndAFailedBlockLeavesNothingRunning() throws {
        let dir = Paths.temporaryDirectory()
        let marker = "61.\(Int.random(in: 100...999))"
        let markdown = "```sh\necho \"a # b\" 'c #d' # said\nsleep \(marker) &\nfalse\n```\n"
        try markdown.write(to: dir.appendingPathComponent("doc.md"), atomically: true, encoding: .utf8)
        let script = dir.appendingPathComponent("blocks.sh").path
        let made = run("/bin/sh", ["-c", "python3 '\(Paths.root.path)/scripts/readme-blocks.py' '\(dir.path)/doc.md' doc.md > '\(script)'"])
        try #require(made.status == 0, "\(made.stderr)")
        let result = run("/bin/bash", ["-euo", "pipefail", script])
        #expect(result.status != 0, "a failing block passed")
        #expect(result.stdout.contains("a # b c #d\n"), "\(result.stdout)")
        let left = run("/usr/bin/pgrep", ["-f", "sleep \(marker)"])
        #expect(left.stdout.isEmpty, "left running: \(left.stdout)")
    }
}
