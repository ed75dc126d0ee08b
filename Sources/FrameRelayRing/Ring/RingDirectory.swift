@preconcurrency import Glibc
import FrameRelaySystem

/// The FrameRelay rings that exist on this machine, read from their headers
/// in `/dev/shm` with `pread` (no mapping: a ring shrunk or forged by
/// anyone cannot fault the reader), for telling a user which App Groups are
/// there when theirs is not.
public enum RingDirectory {
    public struct Entry: Sendable, Equatable {
        public var appGroup: String
        /// The producer's pid as the ring states it (0: none).
        public var producerPid: UInt32
    }

    /// Every readable ring with a valid header, sorted by App Group.
    public static func list(directory: String = "/dev/shm") -> [Entry] {
        let prefix = String(AppGroup.sharedMemoryPrefix.dropFirst())  // "fr-"
        let entries = SharedMemorySegment.fileNames(in: directory, prefix: prefix).compactMap { read(directory + "/" + $0) }
        return entries.sorted { $0.appGroup < $1.appGroup }
    }

    private static func read(_ path: String) -> Entry? {
        guard let file = try? FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK), let info = try? file.status(),
            info.st_mode & S_IFMT == S_IFREG, info.st_size >= RingLayout.headerSize
        else { return nil }
        var header = [UInt8](repeating: 0, count: RingLayout.producerPidOffset + 4)
        let count = try? header.withUnsafeMutableBytes { bytes throws(SystemError) in try file.read(into: bytes, at: 0) }
        guard count == header.count else { return nil }
        return header.withUnsafeBytes { bytes -> Entry? in
            guard UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: RingLayout.magicOffset, as: UInt64.self)) == RingLayout.magic else { return nil }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: RingLayout.appGroupLengthOffset, as: UInt32.self)))
            guard (1...AppGroup.maxLength).contains(length), RingLayout.appGroupOffset + length <= RingLayout.producerPidOffset else { return nil }
            let name = String(decoding: bytes[RingLayout.appGroupOffset..<(RingLayout.appGroupOffset + length)], as: UTF8.self)
            guard (try? AppGroup(name)) != nil else { return nil }
            let pid = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: RingLayout.producerPidOffset, as: UInt32.self))
            return Entry(appGroup: name, producerPid: pid)
        }
    }

    /// One line for a host waiting on `group`: the rings there are, the nearest name first.
    public static func hint(for group: AppGroup, directory: String = "/dev/shm") -> String {
        let others = list(directory: directory).filter { $0.appGroup != group.name }
        guard !others.isEmpty else {
            return "\(group): no producer yet, and no other FrameRelay ring on this machine (is broadcast-sim running?)"
        }
        let sorted = others.sorted { EditDistance.between($0.appGroup, group.name) < EditDistance.between($1.appGroup, group.name) }
        let named = sorted.prefix(5).map { "\($0.appGroup)" + ($0.producerPid == 0 ? "" : " (producer \($0.producerPid))") }
        let guess = EditDistance.nearest(to: group.name, among: sorted.map(\.appGroup), within: max(3, group.name.count / 10)).map { "; did you mean \($0)?" } ?? ""
        return "\(group): no producer yet; rings for other App Groups here: " + named.joined(separator: ", ") + guess
    }
}
