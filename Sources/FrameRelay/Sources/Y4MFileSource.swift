import Foundation

/// Reads a YUV4MPEG2 (4:2:0) file frame by frame, looping at its end when
/// asked: the format of the shared desktop clip after `xz -dk`.
public final class Y4MFileSource: FrameSource {
    public let width: Int
    public let height: Int
    /// Frames per second from the header's `F` field.
    public let frameRate: Double
    private let handle: FileHandle
    private let path: String
    private let dataStart: UInt64
    private let loop: Bool
    private let buffer: PixelBuffer
    private let frameBytes: Int

    /// Opens `path` and parses its header; throws a ``SourceError`` naming
    /// the file and what is wrong with it.
    public init(path: String, loop: Bool = true) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw SourceError.missingFile(path) }
        self.handle = handle
        self.path = path
        self.loop = loop
        let head = try handle.read(upToCount: 512) ?? Data()
        guard head.starts(with: Array("YUV4MPEG2 ".utf8)), let newline = head.firstIndex(of: 0x0A) else {
            throw SourceError.malformed(path, "not a YUV4MPEG2 file")
        }
        let fields = String(decoding: head[..<newline], as: UTF8.self).split(separator: " ").dropFirst()
        var width = 0, height = 0, rate = 30.0
        for field in fields {
            let value = field.dropFirst()
            switch field.first {
            case "W": width = Int(value) ?? 0
            case "H": height = Int(value) ?? 0
            case "F":
                let parts = value.split(separator: ":").compactMap { Double($0) }
                if parts.count == 2, parts[0] > 0, parts[1] > 0 { rate = parts[0] / parts[1] }
            case "C":
                guard value.hasPrefix("420") else { throw SourceError.malformed(path, "colour space C\(value), only 4:2:0 is supported") }
            case "I":
                guard value == "p" || value == "?" else { throw SourceError.malformed(path, "interlaced (I\(value))") }
            default: break
            }
        }
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw SourceError.malformed(path, "bad size W\(width) H\(height)")
        }
        self.width = width
        self.height = height
        self.frameRate = rate
        self.dataStart = UInt64(newline + 1)
        self.buffer = try PixelBuffer(width: width, height: height, format: .i420, rowAlignment: 1)
        self.frameBytes = buffer.byteCount
        try handle.seek(toOffset: dataStart)
    }

    deinit { try? handle.close() }

    public func nextFrame(number: UInt64) throws -> PixelBuffer? {
        guard let marker = try readLine() else {
            guard loop, number > 0 else { return nil }
            try handle.seek(toOffset: dataStart)
            return try nextFrame(number: number)
        }
        guard marker.hasPrefix("FRAME") else { throw SourceError.malformed(path, "expected FRAME, found \"\(marker.prefix(16))\"") }
        // The planes are tight (row alignment 1), so one read fills them.
        let data = try handle.read(upToCount: frameBytes) ?? Data()
        guard data.count == frameBytes else {
            guard loop else { return nil }
            try handle.seek(toOffset: dataStart)
            return try nextFrame(number: number)
        }
        data.withUnsafeBytes { buffer.storage.copyMemory(from: $0.baseAddress!, byteCount: frameBytes) }
        return buffer
    }

    private func readLine() throws -> String? {
        var bytes: [UInt8] = []
        while let byte = try handle.read(upToCount: 1)?.first {
            if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
            if bytes.count > 256 { throw SourceError.malformed(path, "frame header too long") }
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}

/// A frame source that could not be opened or read.
public enum SourceError: Error, CustomStringConvertible {
    case missingFile(String)
    case malformed(String, String)
    case display(String)

    public var description: String {
        switch self {
        case .missingFile(let path): "cannot open \(path): no such file or not readable"
        case .malformed(let path, let reason): "malformed video file \(path): \(reason)"
        case .display(let reason): "X11 capture: \(reason)"
        }
    }
}
