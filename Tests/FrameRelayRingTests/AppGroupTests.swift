import FrameRelayRing
import Testing

@Suite struct AppGroupTests {
    @Test(arguments: [
        "group.com.example.app.ScreenSharingExtension", "group.a", "group.io.x-y.App2",
    ])
    func acceptsValidNames(_ name: String) throws {
        let group = try AppGroup(name)
        #expect(group.name == name)
        #expect(group.sharedMemoryName.count <= 31)  // Darwin's limit
        #expect(group.sharedMemoryName.hasPrefix(AppGroup.sharedMemoryPrefix))
    }

    @Test(arguments: [
        "", "com.example.app", "group.", "group..a", "group.a..b", "group.a b", "group.a/b", "group.-a", "group.a-",
        "group.ä", "group." + String(repeating: "a", count: 300),
    ])
    func rejectsInvalidNames(_ name: String) {
        #expect(throws: AppGroupError.self) { try AppGroup(name) }
    }

    @Test func distinctGroupsGetDistinctSegments() throws {
        let a = try AppGroup("group.com.example.one")
        let b = try AppGroup("group.com.example.two")
        #expect(a.sharedMemoryName != b.sharedMemoryName)
        #expect(a.sharedMemoryName == (try AppGroup("group.com.example.one")).sharedMemoryName)
    }

    @Test func errorNamesTheProblem() {
        do {
            _ = try AppGroup("com.example.app")
            Issue.record("accepted a name without group.")
        } catch {
            #expect(error.description.contains("must start with \"group.\""))
        }
    }
}
