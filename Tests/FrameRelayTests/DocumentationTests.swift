import Foundation
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
}
