@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import Testing

/// A picture of `format` whose every byte of plane N is `fill + N`.
public func makeBuffer(_ width: Int = 64, _ height: Int = 48, _ format: PixelFormat = .i420, fill: UInt8 = 7) throws -> PixelBuffer {
    let buffer = try PixelBuffer(width: width, height: height, format: format)
    for plane in 0..<format.planeCount {
        buffer.withUnsafeMutablePlane(plane) { bytes, _ in _ = bytes.initializeMemory(as: UInt8.self, repeating: fill &+ UInt8(plane)) }
    }
    return buffer
}

/// Calls `host.next` until an event that `wanted` accepts comes (or gives up after about a second).
public func nextEvent(_ host: RingHost, where wanted: (HostEvent) -> Bool) throws -> HostEvent? {
    for _ in 0..<50 {
        let event = try host.next(timeoutNanoseconds: 20_000_000)
        if wanted(event) { return event }
    }
    return nil
}

/// A producer and a host of a fresh App Group, with frame 1 of `buffer` already handed over.
public func ringWithOneFrameTaken(_ tag: String, _ buffer: PixelBuffer) throws -> (group: AppGroup, producer: RingProducer, host: RingHost) {
    let group = uniqueGroup(tag)
    let producer = try RingProducer(appGroup: group, slotCapacity: buffer.capacity)
    let host = RingHost(appGroup: group)
    try producer.publish(buffer, frameNumber: 1, captureTime: 1)
    guard case .frame = try nextFrameEvent(host) else { throw SystemError("publish", "no first frame in \(group)", code: .ioError) }
    return (group, producer, host)
}

/// Calls `host.next` until a frame or invalid frame comes (or gives up).
public func nextFrameEvent(_ host: RingHost) throws -> HostEvent? {
    try nextEvent(host) {
        switch $0 {
        case .frame, .invalidFrame: true
        default: false
        }
    }
}

/// A plain mapping of a segment, to play the part of another process.
public final class RawMapping {
    public let fd: Int32
    public let base: UnsafeMutableRawPointer
    public let size: Int

    public init(name: String) throws {
        fd = shm_open(name, O_RDWR, 0)
        guard fd >= 0 else { throw SystemError("shm_open", name, code: .current) }
        var info = stat()
        fstat(fd, &info)
        size = Int(info.st_size)
        base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)!
    }

    public init(create name: String, size: Int) throws {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw SystemError("shm_open", name, code: .current) }
        ftruncate(fd, off_t(size))
        self.size = size
        base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)!
    }

    deinit {
        munmap(base, size)
        close(fd)
    }

    /// Writes a well-formed ring header for `group` with slots of `capacity` bytes (the state word and pid left to the caller).
    public func writeHeader(for group: AppGroup, capacity: Int) {
        setU64(RingLayout.magicOffset, RingLayout.magic)
        setU32(RingLayout.versionOffset, RingLayout.version)
        setU32(RingLayout.headerSizeOffset, UInt32(RingLayout.headerSize))
        setU32(RingLayout.slotCountOffset, UInt32(RingLayout.slotCount))
        setU64(RingLayout.slotCapacityOffset, UInt64(capacity))
        setU64(RingLayout.slotStrideOffset, UInt64(RingLayout.slotStride(capacity: capacity)))
        setU64(RingLayout.segmentSizeOffset, UInt64(RingLayout.segmentSize(capacity: capacity)))
        setString(group.name, lengthAt: RingLayout.appGroupLengthOffset, at: RingLayout.appGroupOffset)
    }

    public func u32(_ offset: Int) -> UInt32 { base.load(fromByteOffset: offset, as: UInt32.self) }
    public func setU32(_ offset: Int, _ value: UInt32) { base.storeBytes(of: value, toByteOffset: offset, as: UInt32.self) }
    public func setU64(_ offset: Int, _ value: UInt64) { base.storeBytes(of: value, toByteOffset: offset, as: UInt64.self) }
    public func setString(_ text: String, lengthAt lengthOffset: Int, at offset: Int) {
        let bytes = Array(text.utf8)
        for (i, byte) in bytes.enumerated() { base.storeBytes(of: byte, toByteOffset: offset + i, as: UInt8.self) }
        setU32(lengthOffset, UInt32(bytes.count))
    }
}
