import Foundation
import FrameRelayFrames
import FrameRelayHost
import Testing

/// Runs a producer into a recording host and returns the IVF file and the host's statistics.
public func recordRun(_ producerArguments: [String], host hostArguments: [String] = []) throws -> (ivf: String, share: ShareStats) {
    let group = uniqueGroup("rec")
    let dir = Paths.temporaryDirectory()
    let ivf = dir.appendingPathComponent("out.ivf").path
    let stats = dir.appendingPathComponent("host.json").path
    let h = host([group], ["--exit-when-finished", "--record", ivf, "--report", stats] + hostArguments)
    // The producer starts once the host looks for its ring: a host that came after a short producer finished would wait for ever.
    try #require(!hostArguments.contains("--quiet"), "recordRun waits for the host's first line, which --quiet hides")
    try #require(h.waitForLog("waiting for frames"), "host: \(h.stderr)")
    let p = producer(group, producerArguments + ["--quiet"])
    #expect(p.wait(timeout: 120) == 0, "producer: \(p.stderr)")
    #expect(h.wait(timeout: 120) == 0, "host: \(h.stderr)")
    let share = try #require(try readShareStats(stats).first)
    return (ivf, share)
}

/// An IVF file as written: its time base (seconds a pts unit is:
/// numerator / denominator) and its whole frames, each with its pts, in order.
public struct IVFFile {
    public var timebase: (numerator: UInt64, denominator: UInt64)
    /// The header's length field (in time base units, as we and ffmpeg write it).
    public var length: UInt64
    public var frames: [(pts: UInt64, bytes: [UInt8])]

    public init(_ path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func little(_ at: Int, _ count: Int) -> UInt64 { (0..<count).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        timebase = bytes.count >= 32 ? (little(20, 4), little(16, 4)) : (0, 0)
        length = bytes.count >= 32 ? little(24, 4) : 0
        frames = []
        var offset = 32  // the file header
        while offset + 12 <= bytes.count {
            let size = Int(little(offset, 4))
            guard offset + 12 + size <= bytes.count else { break }
            frames.append((little(offset + 4, 8), Array(bytes[(offset + 12)..<(offset + 12 + size)])))
            offset += 12 + size
        }
    }
}

/// The frames of an IVF file, in order.
public func ivfFrames(_ path: String) throws -> [[UInt8]] { try IVFFile(path).frames.map(\.bytes) }

public enum FFmpeg {
    /// Frames ffprobe counts by decoding.
    public static func frameCount(_ path: String) -> Int? {
        let result = run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                              "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// How long ffprobe says the file plays, in seconds.
    public static func duration(_ path: String) -> Double? {
        let result = run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        return Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Decodes the whole file; returns what ffmpeg printed at error level (empty when clean).
    /// Every decoded frame out once, at its own time: our frames carry their
    /// capture times, and two a stall brought closer than a frame interval
    /// would otherwise meet at one output time ("non monotonically increasing dts").
    public static let variableRate = ["-enc_time_base", "-1", "-fps_mode", "passthrough"]

    public static func decodeErrors(_ path: String) -> String {
        let result = run("/usr/bin/ffmpeg", ["-v", "error", "-i", path] + variableRate + ["-f", "null", "-"])
        return result.status == 0 ? result.stderr : "exit \(result.status): \(result.stderr)"
    }

    /// Decoded luma planes (8-bit grey), one Data per frame.
    public static func grayFrames(_ path: String, width: Int, height: Int) throws -> [Data] {
        let out = Paths.temporaryDirectory().appendingPathComponent("gray.raw").path
        let result = run("/usr/bin/ffmpeg", ["-v", "error", "-i", path] + variableRate + ["-f", "rawvideo", "-pix_fmt", "gray", "-y", out])
        #expect(result.status == 0, "\(result.stderr)")
        return try stampedNumbers(rawGray: out, width: width, height: height).frames
    }

    /// Average PSNR (dB) of `distorted` against the 30 fps `reference`, by
    /// ffmpeg's psnr filter, over all planes or over `plane` ("y", "u", "v")
    /// alone. Our time stamps follow the capture clock, so the decoded
    /// frames are first laid out as raw video at 30 fps: frame n is then
    /// compared with reference frame n.
    public static func psnr(_ distorted: String, reference: String, width: Int, height: Int, plane: String = "average") -> Double? {
        let raw = Paths.temporaryDirectory().appendingPathComponent("decoded.yuv").path
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let decode = run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", distorted, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", raw])
        guard decode.status == 0 else { return nil }
        let result = run("/usr/bin/ffmpeg", ["-f", "rawvideo", "-video_size", "\(width)x\(height)", "-framerate", "30", "-pix_fmt", "yuv420p",
                                             "-i", raw, "-i", reference, "-lavfi", "psnr", "-f", "null", "-"])
        guard let range = result.stderr.range(of: " \(plane):") else { return nil }
        return Double(result.stderr[range.upperBound...].prefix { "0123456789.".contains($0) })
    }

    /// key_frame and width of each decoded frame.
    public static func frames(_ path: String) -> [(key: Bool, width: Int)] {
        let result = run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "frame=key_frame,width", "-of", "csv=p=0", path])
        return result.stdout.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: ",")
            guard parts.count >= 2, let w = Int(parts[1]) else { return nil }
            return (parts[0] == "1", w)
        }
    }
}

/// Splits a raw 8-bit grey file into frames and reads each frame's stamp.
public func stampedNumbers(rawGray path: String, width: Int, height: Int) throws -> (frames: [Data], numbers: [UInt64]) {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let size = width * height
    let frames = stride(from: 0, to: data.count - size + 1, by: size).map { data.subdata(in: $0..<($0 + size)) }
    return (frames, frames.compactMap { stamp($0, width: width, height: height) })
}

/// Reads the frame-number stamp from a grey frame.
public func stamp(_ frame: Data, width: Int, height: Int) -> UInt64? {
    frame.withUnsafeBytes { FrameStamp.read(luma: $0, stride: width, width: width, height: height) }
}
