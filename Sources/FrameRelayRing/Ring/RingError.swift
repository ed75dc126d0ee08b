@preconcurrency import Glibc
import FrameRelaySystem
/// Why a ring could not be created or attached. Each description is one line
/// that names the segment and what was wrong.
public enum RingError: Error, CustomStringConvertible {
    case system(SystemError)
    case foreignOwner(segment: String, uid: UInt32)
    case openPermissions(segment: String, mode: UInt32)
    case notARing(segment: String, magic: UInt64)
    case versionMismatch(segment: String, found: UInt32)
    case appGroupMismatch(segment: String, expected: String, found: String)
    case malformedHeader(segment: String, reason: String)
    case producerRunning(segment: String, pid: Int32)
    case hostRunning(segment: String, pid: Int32)
    /// Another host serves the App Group: this one stops before opening any output.
    case appGroupHosted(appGroup: String, holder: Holder?)
    case frameTooLarge(bytes: Int, capacity: Int)
    case badCapacity(Int)

    public var description: String {
        switch self {
        case .system(let error):
            "\(error)"
        case .foreignOwner(let segment, let uid):
            "refusing segment \(segment): owned by uid \(uid), not by this user"
        case .openPermissions(let segment, let mode):
            "refusing segment \(segment): mode \(String(mode, radix: 8)) lets other users in (must be 600)"
        case .notARing(let segment, let magic):
            "refusing segment \(segment): not a FrameRelay ring (magic 0x\(String(magic, radix: 16)))"
        case .versionMismatch(let segment, let found):
            "refusing segment \(segment): ring version \(found), this build speaks version \(RingLayout.version)"
        case .appGroupMismatch(let segment, let expected, let found):
            "refusing segment \(segment): it belongs to App Group \"\(PeerText.quoted(found))\", not \"\(expected)\""
        case .malformedHeader(let segment, let reason):
            "refusing segment \(segment): malformed header (\(reason))"
        case .producerRunning(let segment, let pid):
            "segment \(segment) is in use by another producer (pid \(pid))"
        case .hostRunning(let segment, let pid):
            "segment \(segment) already has a host attached (pid \(pid))"
        case .appGroupHosted(let appGroup, let holder):
            if let holder, holder.isOurHost {
                "\(appGroup) is already hosted by pid \(holder.pid): this host opened and wrote nothing"
            } else if let holder {
                "\(appGroup) is claimed by pid \(holder.pid) (uid \(holder.uid), \(holder.program ?? "program unknown")), "
                    + "not a frame-relay host of this user: this host opened and wrote nothing; stop that process or use another App Group"
            } else {
                // A host of ours listens on its claim; one that does not answer took the name without being one.
                "\(appGroup) is claimed by a process that does not answer as a frame-relay host does (it holds the name without listening): "
                    + "this host opened and wrote nothing; stop that process or use another App Group"
            }
        case .frameTooLarge(let bytes, let capacity):
            "frame of \(bytes) bytes does not fit the ring's \(capacity)-byte slots"
        case .badCapacity(let capacity):
            "invalid slot capacity \(capacity) bytes"
        }
    }
}

extension RingError {
    /// The process that holds an App Group's host claim: its pid, user and program (`/proc/PID/comm`).
    public struct Holder: Sendable, Equatable {
        public var pid: Int32
        public var uid: UInt32
        public var program: String?

        public init(pid: Int32, uid: UInt32 = getuid(), program: String? = "frame-relay") {
            self.pid = pid
            self.uid = uid
            self.program = program
        }

        /// A frame-relay host of this user (the one that refused us is one, or is not).
        public var isOurHost: Bool { uid == getuid() && program == "frame-relay" }
    }
}

extension RingError {
    init(_ error: SegmentOpenError, segment: String) {
        switch error {
        case .missing: self = .system(SystemError("shm_open", segment, code: .noSuchFile))
        case .empty: self = .malformedHeader(segment: segment, reason: "empty segment")
        case .foreignOwner(let uid): self = .foreignOwner(segment: segment, uid: uid)
        case .openPermissions(let mode): self = .openPermissions(segment: segment, mode: mode)
        case .system(let error): self = .system(error)
        }
    }
}
