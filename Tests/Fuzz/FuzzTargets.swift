// libFuzzer entry points for every parser that reads what another process
// or a network peer wrote. Built by scripts/fuzz with AddressSanitizer, over
// modules built for testing (so that their internal parsers are reachable);
// FUZZ_TARGET picks the target:
//
//   slot  ring header and slot metadata validation (shared memory)
//   rtp   RTP/VP8 depacketizer, jitter buffer and decoder (length-prefixed packets)
//   rtcp  RTCP compound-packet parser (the host's feedback input)
//   http  HTTP request-head parser (the viewer)
//   y4m   Y4M header parser and frame reader
//   jpeg  JPEG frames through the host's converter (turbojpeg)
@preconcurrency import Glibc
@testable import FrameRelaySystem
@testable import FrameRelayFrames
@testable import FrameRelayRing
@testable import FrameRelayProducer
@testable import FrameRelayRTP
@testable import FrameRelayHTTP
@testable import FrameRelayHost
import FrameRelayHTTP
import FrameRelayHost

private enum Target: String {
    case slot, rtp, rtcp, http, y4m, jpeg
}

private let target: Target = {
    guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let target = Target(rawValue: name) else {
        fputs("FUZZ_TARGET must be one of slot, rtp, rtcp, http, y4m, jpeg\n", stderr)
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    switch target {
    case .slot: fuzzSlot(bytes)
    case .rtp: fuzzRTP(bytes)
    case .rtcp: fuzzRTCP(bytes)
    case .http: _ = HTTPRequestHead.parse(Array(bytes)[...])
    case .y4m: fuzzY4M(bytes)
    case .jpeg: fuzzJPEG(bytes)
    }
    return 0
}

// MARK: - Shared memory

private let slotCapacity = 4096
nonisolated(unsafe) private let segment: UnsafeMutableRawPointer = .allocate(byteCount: RingLayout.segmentSize(capacity: slotCapacity), alignment: 4096)
private let fuzzGroup = try! AppGroup("group.com.example.app.ScreenSharingExtension")

/// The input is a ring segment's first bytes (the rest zero): the header is
/// inspected as a host or producer would, and every slot's metadata
/// validated; a slot that passes has each of its planes read end to end,
/// and one that says where it changed is compared only there, as the host
/// does when it holds the picture named.
private func fuzzSlot(_ bytes: UnsafeRawBufferPointer) {
    let size = RingLayout.segmentSize(capacity: slotCapacity)
    segment.initializeMemory(as: UInt8.self, repeating: 0, count: size)
    segment.copyMemory(from: bytes.baseAddress ?? UnsafeRawPointer(segment), byteCount: min(bytes.count, size))
    let header = RingHeader(base: segment)
    _ = try? header.inspect(mappedSize: size, appGroup: fuzzGroup, segment: "/fuzz")
    let state = SlotState(raw: header.slotState.pointee.load(ordering: .relaxed))
    if state.isValid { _ = state.taking().publishing(sequence: 1) }
    _ = header.setupInfo
    for slot in 0..<RingLayout.slotCount {
        let base = UnsafeRawPointer(segment + RingLayout.slotOffset(slot, capacity: slotCapacity))
        guard let metadata = try? SlotHeader.load(from: base, capacity: slotCapacity) else { continue }
        let frame = FrameView(metadata: metadata, payload: base + SlotHeader.byteCount)
        var sum: UInt8 = 0
        for plane in 0..<metadata.format.planeCount {
            frame.withUnsafePlane(plane) { bytes, _ in for byte in bytes { sum &+= byte } }
        }
        frame.withUnsafePayload { for byte in $0 { sum &+= byte } }
        blackHole(sum)
        if metadata.changedSince != 0, metadata.format != .jpeg {
            compareChangedRegion(frame)
        }
    }
}

private func compareChangedRegion(_ frame: FrameView) {
    let detector = DamageDetector(), converter = FrameConverter()
    let m = frame.metadata
    guard let input = try? converter.convert(frame) else { return }
    var held = m
    held.picture = m.changedSince
    let changed = UnsafeMutablePointer<UInt8>.allocate(capacity: (m.width + 15) / 16 * ((m.height + 15) / 16))
    defer { changed.deallocate() }
    _ = try? detector.compare(input, source: held, into: changed)
    guard let region = detector.changes(in: m), let partial = try? converter.convert(frame, only: region) else { return }
    _ = try? detector.compare(partial, source: m, region: region, into: changed)
}

// MARK: - Network input

/// One receiver for the whole run, on a free port (it sends nothing: no Sender Report tells it where to).
nonisolated(unsafe) private let receiver: RTPReceiver = {
    for _ in 0..<100 {
        if let receiver = try? RTPReceiver(port: Int.random(in: 40_000...60_000) & ~1) { return receiver }
    }
    fatalError("no free UDP port pair for the fuzzed receiver")
}()

/// The input is packets, each a 2-byte big-endian length and its bytes, as
/// they would come off the socket (at least 12 bytes, as the receiver reads them).
private func fuzzRTP(_ bytes: UnsafeRawBufferPointer) {
    var offset = 0
    while offset + 2 <= bytes.count {
        let length = min(Int(bytes[offset]) << 8 | Int(bytes[offset + 1]), 1600, bytes.count - offset - 2)
        offset += 2
        if length >= 12 { receiver.receive(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])) }
        offset += length
    }
}

private func fuzzRTCP(_ bytes: UnsafeRawBufferPointer) {
    var feedback = RTCP.Feedback()
    RTCP.parse(bytes, ssrc: 0x1234_5678, into: &feedback)
    blackHole(UInt8(truncatingIfNeeded: feedback.nacked.count))
}

// MARK: - Files

/// This process's scratch file for the y4m target.
private let y4mPath = "/tmp/frame-relay-fuzz-\(getpid()).y4m"

/// The input is a Y4M file: its header parsed; when it declares a modest
/// picture, the file written out, opened and its first frames read.
private func fuzzY4M(_ bytes: UnsafeRawBufferPointer) {
    guard let header = try? Y4MFileSource.parseHeader(Array(bytes.prefix(512))[...], path: "fuzz.y4m"),
        header.width * header.height <= 1 << 20
    else { return }
    let fd = open(y4mPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return }
    _ = write(fd, bytes.baseAddress, bytes.count)
    close(fd)
    guard let source = try? Y4MFileSource(path: y4mPath, loop: false) else { return }
    for number in 0..<3 { _ = try? source.nextFrame(number: UInt64(number)) }
}

nonisolated(unsafe) private let converter = FrameConverter()

/// The input is a width and a height (two bytes each, 1...1024) and then a
/// JPEG file, as a slot would carry it.
private func fuzzJPEG(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count > 4 else { return }
    let width = 1 + (Int(bytes[0]) << 8 | Int(bytes[1])) % 1024
    let height = 1 + (Int(bytes[2]) << 8 | Int(bytes[3])) % 1024
    let metadata = FrameMetadata(
        frameNumber: 1, captureTime: 1, width: width, height: height, format: .jpeg, orientation: .up,
        payloadSize: bytes.count - 4, planes: PlaneLayout())
    _ = try? converter.convert(FrameView(metadata: metadata, payload: bytes.baseAddress! + 4))
}

@inline(never) private func blackHole(_ value: UInt8) { if value == 0x5A, getenv("FUZZ_NEVER") != nil { print(value) } }
