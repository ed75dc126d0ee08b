@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames

/// Reads a YUV4MPEG2 (4:2:0) file frame by frame, looping at its end when
/// asked: the format of the shared desktop clip after `xz -dk`. Frames are
/// read with pread(2) straight into one reused buffer.
public final class Y4MFileSource: FrameSource {
    public let width: Int
    public let height: Int
    /// Frames per second from the header's `F` field.
    public let frameRate: Double
    private let file: FileDescriptor
    private let path: String
    private let dataStart: Int
    private let loop: Bool
    private let buffer: PixelBuffer
    private let frameBytes: Int
    private var position: Int
    /// The frame header line is read here (allocated once).
    private let marker = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)

    /// Opens `path` and parses its header; throws a ``SourceError`` naming
    /// the file and what is wrong with it.
    public init(path: String, loop: Bool = true) throws {
        guard let opened = try? FileDescriptor.open(path, O_RDONLY) else { throw SourceError.missingFile(path) }
        if let info = try? opened.status(), info.st_mode & S_IFMT == S_IFDIR { throw SourceError.directory(path) }
        let header = try Self.parseHeader(Self.start(of: opened), path: path)
        file = opened
        let (width, height, rate, newline) = (header.width, header.height, header.frameRate, header.dataStart - 1)
        self.path = path
        self.loop = loop
        self.width = width
        self.height = height
        self.frameRate = rate
        self.dataStart = newline + 1
        self.position = newline + 1
        self.buffer = try PixelBuffer(width: width, height: height, format: .i420, rowAlignment: 1)
        self.frameBytes = buffer.byteCount
        // A file that ends before its first whole frame has nothing to send.
        guard try readFrame() else { throw SourceError.malformed(path, "no whole \(width)x\(height) frame after the header") }
        position = dataStart
    }

    deinit { marker.deallocate() }

    /// The file's first 512 bytes (fewer if it is shorter), where its header is.
    private static func start(of file: borrowing FileDescriptor) -> ArraySlice<UInt8> {
        var head = [UInt8](repeating: 0, count: 512)
        let count = head.withUnsafeMutableBytes { bytes in (try? file.read(into: bytes, at: 0)) ?? 0 }
        return head[..<count]
    }

    /// What a Y4M stream header says: picture size, frame rate, and where
    /// the first frame starts.
    public struct Header: Equatable, Sendable {
        public var width: Int
        public var height: Int
        public var frameRate: Double
        public var dataStart: Int
    }

    /// The frame rates a Y4M header may declare.
    static let frameRates = 0.01...1000.0

    /// Parses the header at the start of `head` (the file's first bytes);
    /// throws a ``SourceError`` naming `path` and what is wrong.
    public static func parseHeader(_ head: ArraySlice<UInt8>, path: String) throws(SourceError) -> Header {
        guard head.count > 10, head.starts(with: Array("YUV4MPEG2 ".utf8)), let newline = head.firstIndex(of: 0x0A) else {
            // A packed clip (the shared one comes as .y4m.xz): say how to unpack it (here, wherever the packed one lies).
            for (magic, kind, unpack, suffix) in [([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00], "xz", "xz -dc", ".xz"), ([0x1F, 0x8B], "gzip", "gunzip -c", ".gz"), ([0x28, 0xB5, 0x2F, 0xFD], "zstd", "zstd -dc", ".zst")]
                as [([UInt8], String, String, String)] where head.starts(with: magic) {
                let name = String(path.split(separator: "/").last ?? "clip")
                let unpacked = name.hasSuffix(suffix) && name.count > suffix.count ? String(name.dropLast(suffix.count)) : name + ".y4m"
                throw SourceError.malformed(path, "it is \(kind)-compressed, not a YUV4MPEG2 file: unpack it first (\(unpack) \(path) > \(unpacked))")
            }
            throw SourceError.malformed(path, "not a YUV4MPEG2 file")
        }
        var width = 0, height = 0, rate = 30.0
        for field in String(decoding: head[head.startIndex..<newline], as: UTF8.self).split(separator: " ").dropFirst() {
            let value = field.dropFirst()
            switch field.first {
            case "W": width = Int(value) ?? 0
            case "H": height = Int(value) ?? 0
            case "F":
                let parts = value.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
                guard parts.count == 2, let numerator = parts[0], let denominator = parts[1], numerator > 0, denominator > 0,
                    Self.frameRates.contains(Double(numerator) / Double(denominator))
                else {
                    throw SourceError.malformed(path, "frame rate F\(value), expected F<n>:<d> between 0.01 and 1000 frames/s")
                }
                rate = Double(numerator) / Double(denominator)
            // 420, 420jpeg, 420paldv, 420mpeg2: 8-bit 4:2:0 (420p10 and the like are not).
            case "C" where !value.hasPrefix("420") || value.dropFirst(3).hasPrefix("p1"):
                throw SourceError.malformed(path, "colour space C\(value), only 8-bit 4:2:0 is supported")
            case "I" where value != "p" && value != "?":
                throw SourceError.malformed(path, "interlaced (I\(value))")
            default: break
            }
        }
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw SourceError.malformed(path, "bad size W\(width) H\(height)")
        }
        return Header(width: width, height: height, frameRate: rate, dataStart: newline - head.startIndex + 1)
    }

    public func nextFrame(number: UInt64) throws -> SourceFrame? {
        if try readFrame() { return SourceFrame(buffer) }
        guard loop, position != dataStart else { return nil }
        position = dataStart
        return try readFrame() ? SourceFrame(buffer) : nil
    }

    /// Reads the frame at `position`; false at the end of the file.
    private func readFrame() throws -> Bool {
        // "FRAME" plus optional parameters, then a newline.
        let count = (try? file.read(into: UnsafeMutableRawBufferPointer(start: marker, count: 64), at: position)) ?? 0
        guard count > 0 else { return false }
        let head = UnsafeRawBufferPointer(start: marker, count: count)
        guard head.starts(with: "FRAME".utf8), let newline = head.firstIndex(of: 0x0A) else {
            throw SourceError.malformed(path, "expected FRAME at byte \(position)")
        }
        // The planes are tight (row alignment 1), so one read fills them.
        let planes = UnsafeMutableRawBufferPointer(start: buffer.storage, count: frameBytes)
        // A truncated last frame ends the file.
        guard (try? file.read(into: planes, at: position + newline + 1)) == frameBytes else { return false }
        position += newline + 1 + frameBytes
        return true
    }
}
