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
struct SharedMemorySegment: ~Copyable {
    let name: String
    let base: UnsafeMutableRawPointer
    let size: Int
    /// Device and inode: tell whether the name still refers to this segment.
    let identity: FileIdentity
    private let fd: Int32
    private let guardHandle: Int32

    /// Creates a new segment with `O_CREAT|O_EXCL` and mode 0600; fails with
    /// `EEXIST` if the name is taken.
    static func create(name: String, size: Int) throws(SystemError) -> SharedMemorySegment {
        let fd = try valueOrErrno("shm_open", name) { shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600) }
        do {
            _ = try valueOrErrno("fchmod", name) { fchmod(fd, 0o600) }
            _ = try valueOrErrno("ftruncate", name) { ftruncate(fd, off_t(size)) }
            return try SharedMemorySegment(name: name, fd: fd, size: size)
        } catch {
            shm_unlink(name)
            close(fd)
            throw error
        }
    }

    /// Opens an existing segment after checking that this user owns it and
    /// that nobody else may write it.
    static func open(name: String) throws(SegmentOpenError) -> SharedMemorySegment {
        let fd: Int32
        do {
            fd = try valueOrErrno("shm_open", name) { shm_open(name, O_RDWR, 0) }
        } catch {
            throw error.code == ENOENT ? .missing : .system(error)
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let code = errno
            close(fd)
            throw .system(SystemError("fstat", name, code: code))
        }
        guard info.st_uid == geteuid() else {
            close(fd)
            throw .foreignOwner(uid: info.st_uid)
        }
        guard info.st_mode & 0o077 == 0 else {
            close(fd)
            throw .openPermissions(mode: info.st_mode & 0o777)
        }
        guard info.st_size > 0 else {
            // Its creator is between shm_open and ftruncate (or died there).
            close(fd)
            throw .empty
        }
        do {
            return try SharedMemorySegment(name: name, fd: fd, size: Int(info.st_size))
        } catch {
            close(fd)
            throw .system(error)
        }
    }

    private init(name: String, fd: Int32, size: Int) throws(SystemError) {
        var info = stat()
        _ = try valueOrErrno("fstat", name) { fstat(fd, &info) }
        guard size > 0 else { throw SystemError("mmap", name, code: EINVAL) }
        let pointer = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let pointer, pointer != MAP_FAILED else { throw SystemError("mmap", name, code: errno) }
        if segment_guard_install() != 0 {
            let code = errno
            munmap(pointer, size)
            throw SystemError("sigaction(SIGBUS)", name, code: code)
        }
        let handle = segment_guard_register(pointer, size)
        guard handle >= 0 else {
            munmap(pointer, size)
            throw SystemError("segment_guard_register", name, code: ENOSPC)  // every guard slot is taken
        }
        self.guardHandle = handle
        self.name = name
        self.fd = fd
        self.size = size
        self.base = pointer
        self.identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    deinit {
        segment_guard_unregister(guardHandle)
        munmap(base, size)
        close(fd)
    }

    /// SIGBUS faults absorbed in this mapping: non-zero once someone shrank
    /// the segment under a page we touched (those pages now read zeros).
    var faults: UInt32 { segment_guard_faults(guardHandle) }

    /// The segment's size now, as its file says (nil if fstat fails).
    var currentSize: Int? {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int(info.st_size) : nil
    }

    /// Whether `name` in /dev/shm still refers to this mapping.
    var isStillLinked: Bool {
        FileIdentity.ofSharedMemory(name: name) == identity
    }

    /// Removes the name if it still refers to this mapping (never another
    /// process's newer segment of the same name).
    func unlinkIfStillLinked() {
        if isStillLinked { shm_unlink(name) }
    }
}

/// A file's device and inode.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    /// The identity of the segment that `name` refers to now, if any.
    static func ofSharedMemory(name: String) -> FileIdentity? {
        var info = stat()
        guard stat("/dev/shm" + name, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}

/// Why an existing segment could not be opened.
enum SegmentOpenError: Error {
    case missing
    case empty
    case foreignOwner(uid: uid_t)
    case openPermissions(mode: mode_t)
    case system(SystemError)
}
