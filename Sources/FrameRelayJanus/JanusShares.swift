import Synchronization
import FrameRelaySystem
import FrameRelayHTTP
import FrameRelayRing

/// Each share's Janus mountpoint (none without Janus servers), watched
/// every 2 s off the frame path, and destroyed when the host is done.
package final class JanusShares {
    package let mountpoints: [JanusMountpoint]
    private let servers: [JanusStreaming]
    private let secret: String?
    private let watching = Watching()

    private final class Watching: Sendable {
        let running = Atomic<Bool>(true)
    }

    /// Opens a mountpoint per group on `servers` (dealt in order), with the
    /// bitrates of the group's simulcast layers; on an error from any Janus,
    /// the ones already opened are destroyed before it is thrown.
    package init(_ groups: [AppGroup], bitrates: [[Int]], servers: [JanusStreaming], secret: String?, log: @escaping @Sendable (String) -> Void) throws {
        self.servers = servers
        self.secret = secret
        var opened: [JanusMountpoint] = []
        do {
            for (index, group) in groups.enumerated() where !servers.isEmpty {
                opened.append(try servers[index % servers.count].openMountpoint(for: group, bitrates: bitrates[index], secret: secret))
            }
        } catch {
            Self.destroy(opened, servers: servers, secret: secret, log: log)
            throw error
        }
        mountpoints = opened
        if !opened.isEmpty { watch(log: log) }
    }

    /// Asks every 2 s whether each Janus still has its mountpoint, and says
    /// once when one stops answering (the share's other outputs go on) and
    /// once when it answers again.
    private func watch(log: @escaping @Sendable (String) -> Void) {
        let mountpoints = mountpoints, servers = servers, secret = secret, watching = watching
        startDetachedThread {
            var failing = Set<Int>()
            while watching.running.load(ordering: .relaxed) {
                for (index, mountpoint) in mountpoints.enumerated() {
                    do {
                        try servers[index % servers.count].check(mountpoint, secret: secret)
                        if failing.remove(index) != nil { log("\(mountpoint.name): Janus \(mountpoint.janus) answers again") }
                    } catch {
                        if failing.insert(index).inserted { log("\(mountpoint.name): \(error); the share's other outputs go on") }
                    }
                }
                for _ in 0..<20 where watching.running.load(ordering: .relaxed) { MonotonicClock.sleep(nanoseconds: 100_000_000) }
            }
        }
    }

    /// Stops the watch and destroys the mountpoints; a Janus that is gone is said once each.
    package func close(log: @escaping @Sendable (String) -> Void) {
        watching.running.store(false, ordering: .relaxed)
        Self.destroy(mountpoints, servers: servers, secret: secret, log: log)
    }

    private static func destroy(_ mountpoints: [JanusMountpoint], servers: [JanusStreaming], secret: String?, log: (String) -> Void) {
        for (index, mountpoint) in mountpoints.enumerated() {
            do {
                try servers[index % servers.count].destroy(mountpoint, secret: secret)
            } catch {
                log("\(mountpoint.name): could not destroy Janus mountpoint \(mountpoint.id): \(error)")
            }
        }
    }
}
