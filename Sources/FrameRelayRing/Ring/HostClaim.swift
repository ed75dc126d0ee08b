@preconcurrency import Glibc
import FrameRelaySystem

/// A host's claim on an App Group, taken before it opens anything (a
/// recording it would truncate, a mountpoint, a port) and held while it
/// runs: a listening Unix socket on an abstract name made of the ring's
/// segment name. The kernel lets one socket bind a name, so of two hosts
/// started at the same moment, or one started while another still waits
/// for its producer, exactly one holds it. The claim goes with its process
/// (kill -9 too) and leaves no file behind; a host refused learns the
/// holder's pid and user by connecting (`SO_PEERCRED`), and its program
/// from /proc. Any process may bind an abstract name (they have no owner
/// or mode): one that is not a frame-relay host of this user is named as
/// such, with its pid, user and program, never taken for a host. Abstract names belong to a
/// network namespace: hosts in two namespaces sharing one /dev/shm are kept
/// apart by the ring's host pid (``RingHost/otherHost(of:)``) instead.
public final class HostClaim {
    private let socket: Socket

    public init(_ appGroup: AppGroup) throws(RingError) {
        let address = SocketAddress(abstractUnix: "frame-relay-host" + appGroup.sharedMemoryName)
        let socket: Socket
        do { socket = try Socket(family: AF_UNIX, type: SOCK_STREAM) } catch { throw .system(error) }
        do {
            try socket.bind(to: address)
            try socket.listen(backlog: 16)
        } catch {
            if error.code == .addressInUse { throw .appGroupHosted(appGroup: appGroup.name, holder: Self.holder(of: address)) }
            throw .system(error)
        }
        self.socket = socket
    }

    /// The process holding the claim at `address` (nil if it cannot be asked now).
    private static func holder(of address: SocketAddress) -> RingError.Holder? {
        guard let probe = try? Socket(family: AF_UNIX, type: SOCK_STREAM, nonBlocking: true), (try? probe.connect(to: address)) != nil,
            let peer = probe.peerProcess()
        else { return nil }
        return RingError.Holder(pid: peer.pid, uid: peer.uid, program: program(of: peer.pid))
    }

    /// A process's program name, from `/proc/PID/comm` (nil when it cannot be read).
    private static func program(of pid: Int32) -> String? {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/comm", O_RDONLY) else { return nil }
        var bytes = [UInt8](repeating: 0, count: 64)
        guard let count = try? bytes.withUnsafeMutableBytes({ buffer throws(SystemError) in try file.read(into: buffer, at: 0) }) else { return nil }
        // The kernel ends the name with one newline; whatever else it holds is the peer's own, written out.
        let name = bytes.prefix(count).last == 0x0A ? bytes.prefix(count - 1) : bytes.prefix(count)
        return PeerText.quoted(String(decoding: name, as: UTF8.self), limit: 64)
    }
}
