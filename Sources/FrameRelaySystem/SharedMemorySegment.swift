@preconcurrency import Glibc
internal import CSegmentGuard

/// A mapped POSIX shared-memory segment with exactly one owner, which unmaps
/// and closes it in `deinit`.
///
/// Another process may shrink the segment under us (`ftruncate`); touching
/// a page past its new end would raise SIGBUS. Every mapping is guarded
/// (``CSegmentGuard``): such a fault replaces the rest of the mapping with
/// private zero pages and counts in ``faults``, so its owner reads zeros,
/// sees the count, and lets the segment go instead of dying.
package struct SharedMemorySegment: ~Copyable {
    package let name: String
    package let base: UnsafeMutableRawPointer
    package let size: Int
    /// Device and inode: tell whether the name still refers to this segment.
    package let identity: FileIdentity
    private let file: FileDescriptor
    private let guardHandle: Int32

    /// Creates a new segment with `O_CREAT|O_EXCL` and mode 0600; fails with
    /// `EEXIST` if the name is taken.
    package static func create(name: String, size: Int) throws(SystemError) -> SharedMemorySegment {
        let file = FileDescriptor(adopting: try valueOrErrno("shm_open", name) { shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600) }, name: name)
        do {
            _ = try valueOrErrno("fchmod", name) { fchmod(file.rawValue, 0o600) }
            _ = try valueOrErrno("ftruncate", name) { ftruncate(file.rawValue, off_t(size)) }
            return try SharedMemorySegment(name: name, file: file, size: size)
        } catch {
            shm_unlink(name)
            throw error
        }
    }

    /// Opens an existing segment after checking that this user owns it and
    /// that nobody else may write it.
    package static func open(name: String) throws(SegmentOpenError) -> SharedMemorySegment {
        let file: FileDescriptor
        do throws(SystemError) {
            file = FileDescriptor(adopting: try valueOrErrno("shm_open", name) { shm_open(name, O_RDWR, 0) }, name: name)
        } catch {
            throw error.code == .noSuchFile ? .missing : .system(error)
        }
        let info: stat
        do throws(SystemError) {
            info = try file.status()
        } catch {
            throw .system(error)
        }
        guard info.st_uid == geteuid() else { throw .foreignOwner(uid: info.st_uid) }
        guard info.st_mode & 0o077 == 0 else { throw .openPermissions(mode: info.st_mode & 0o777) }
        // Empty: its creator is between shm_open and ftruncate (or died there).
        guard info.st_size > 0 else { throw .empty }
        do {
            return try SharedMemorySegment(name: name, file: file, size: Int(info.st_size))
        } catch {
            throw .system(error)
        }
    }

    private init(name: String, file: consuming FileDescriptor, size: Int) throws(SystemError) {
        let info = try file.status()
        guard size > 0 else { throw SystemError("mmap", name, code: .invalidArgument) }
        let pointer = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, file.rawValue, 0)
        guard let pointer, pointer != MAP_FAILED else { throw .current("mmap", name) }
        if segment_guard_install() != 0 {
            let error = SystemError.current("sigaction(SIGBUS)", name)
            munmap(pointer, size)
            throw error
        }
        let handle = segment_guard_register(pointer, size)
        guard handle >= 0 else {
            munmap(pointer, size)
            throw SystemError("segment_guard_register", name, code: .noSpace)  // every guard slot is taken
        }
        self.guardHandle = handle
        self.name = name
        self.file = file
        self.size = size
        self.base = pointer
        self.identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    deinit {
        segment_guard_unregister(guardHandle)
        munmap(base, size)
    }

    /// SIGBUS faults absorbed in this mapping: non-zero once someone shrank
    /// the segment under a page we touched (those pages now read zeros).
    package var faults: UInt32 { segment_guard_faults(guardHandle) }

    /// The segment's size now, as its file says (nil if fstat fails).
    package var currentSize: Int? {
        (try? file.status()).map { Int($0.st_size) }
    }

    /// Whether `name` in /dev/shm still refers to this mapping.
    package var isStillLinked: Bool {
        FileIdentity.ofSharedMemory(name: name) == identity
    }

    /// Removes the name if it still refers to this mapping (never another
    /// process's newer segment of the same name).
    package func unlinkIfStillLinked() {
        if isStillLinked { shm_unlink(name) }
    }
}

/// A file's device and inode.
package struct FileIdentity: Equatable {
    package var device: UInt64
    package var inode: UInt64

    /// The identity of the segment that `name` refers to now, if any.
    package static func ofSharedMemory(name: String) -> FileIdentity? {
        var info = stat()
        guard stat("/dev/shm" + name, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}

extension SharedMemorySegment {
    /// Removes the name `name` (a segment whose creator died before sizing it).
    package static func unlink(name: String) {
        shm_unlink(name)
    }

    /// The names of the files in `directory` (normally `/dev/shm`) that start with `prefix`.
    package static func fileNames(in directory: String, prefix: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let item = readdir(dir) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { names.append(name) }
        }
        return names
    }
}

/// Why an existing segment could not be opened.
package enum SegmentOpenError: Error {
    case missing
    case empty
    case foreignOwner(uid: uid_t)
    case openPermissions(mode: mode_t)
    case system(SystemError)
}
