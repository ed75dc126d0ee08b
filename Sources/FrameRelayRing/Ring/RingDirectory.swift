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

    /// The edit distance between two names (insertions, deletions, substitutions).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }

    /// One line for a host waiting on `group`: the rings there are, the nearest name first.
    public static func hint(for group: AppGroup, directory: String = "/dev/shm") -> String {
        let others = list(directory: directory).filter { $0.appGroup != group.name }
        guard !others.isEmpty else {
            return "\(group): no producer yet, and no other FrameRelay ring on this machine (is broadcast-sim running?)"
        }
        let sorted = others.sorted { distance($0.appGroup, group.name) < distance($1.appGroup, group.name) }
        let nearest = sorted[0]
        let named = sorted.prefix(5).map { "\($0.appGroup)" + ($0.producerPid == 0 ? "" : " (producer \($0.producerPid))") }
        let guess = distance(nearest.appGroup, group.name) <= max(3, group.name.count / 10) ? "; did you mean \(nearest.appGroup)?" : ""
        return "\(group): no producer yet; rings for other App Groups here: " + named.joined(separator: ", ") + guess
    }
}
