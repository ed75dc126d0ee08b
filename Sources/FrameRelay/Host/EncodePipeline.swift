@preconcurrency import Glibc

/// The host's work on each taken frame: convert if needed, encode VP8,
/// record, with a timestamp at every stage kept in fixed-memory histograms.
public final class EncodePipeline {
    /// What to encode and where to put it.
    public struct Options: Sendable {
        public var settings = VP8Settings()
        /// Scale frames down to fit this size.
        public var maxSize: (width: Int, height: Int)?
        /// Record IVF here.
        public var recordPath: String?
        public init() {}
    }

    public let encoder: VP8Encoder
    private let converter: FrameConverter
    private let recorder: IVFWriter?
    private var sizeWritten = false
    private(set) var stats = EncodeStats()
    private var convertTime = LatencyHistogram()
    private var encodeTime = LatencyHistogram()
    private var captureToEncoded = LatencyHistogram()
    private var recentCaptureToEncoded = LatencyHistogram()
    private var firstPts: Int64?
    /// Stage times of the last frame processed (CLOCK_MONOTONIC ns).
    public private(set) var lastConverted: UInt64 = 0
    public private(set) var lastEncoded: UInt64 = 0
    /// Called with every encoded frame (for transports), during the frame's processing.
    public var onEncoded: ((EncodedFrame, FrameMetadata) throws -> Void)?

    /// Validates the settings and opens the recording now, so that a bad
    /// setting or an unwritable path fails before any frame arrives.
    public init(options: Options) throws {
        encoder = try VP8Encoder(settings: options.settings)
        if let maxSize = options.maxSize {
            guard (2...FrameMetadata.maxDimension).contains(maxSize.width), (2...FrameMetadata.maxDimension).contains(maxSize.height) else {
                throw CodecError.invalidSetting("invalid maximum size \(maxSize.width)x\(maxSize.height): VP8 codes 2...16383")
            }
        }
        // Parallel BGRA conversion only when this share has the machine to itself.
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        converter = FrameConverter(maxSize: options.maxSize, bands: FrameConverter.bands(concurrentEncoders: options.settings.concurrentEncoders, cores: cores))
        if let path = options.recordPath {
            do {
                recorder = try IVFWriter(path: path, width: 0, height: 0)
            } catch {
                throw CodecError.invalidSetting("cannot write recording \(path): \(SystemError.name(of: error.code))")
            }
        } else {
            recorder = nil
        }
    }

    /// Converts, encodes and records one frame taken at `takenTime`.
    ///
    /// A frame whose content cannot be converted or encoded (a JPEG that
    /// disagrees with its metadata, a corrupt one, a size libvpx refuses)
    /// throws ``InvalidFrame/undecodable(frameNumber:reason:)``: one bad
    /// frame, to count and skip. Anything else it throws (writing the
    /// recording) is about this host's own outputs.
    public func process(_ frame: FrameView, takenTime: UInt64) throws {
        let input: EncoderInput
        do {
            input = try converter.convert(frame)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: frame.metadata.frameNumber, reason: "\(error)")
        }
        let converted = MonotonicClock.now()
        if let recorder, !sizeWritten {
            recorder.setDimensions(width: input.width, height: input.height)
            sizeWritten = true
        }
        // "Encoded" is when libvpx hands over the frame, before it is recorded or sent.
        var encoded: UInt64 = 0
        do {
            try encoder.encode(input, captureTime: frame.metadata.captureTime) { packet in
                if encoded == 0 { encoded = MonotonicClock.now() }
                try recorder?.write(packet)
                stats.bytes += UInt64(packet.bytes.count)
                try onEncoded?(packet, frame.metadata)
            }
        } catch let error as CodecError {
            throw InvalidFrame.undecodable(frameNumber: frame.metadata.frameNumber, reason: "\(error)")
        }
        if encoded == 0 { encoded = MonotonicClock.now() }  // the encoder dropped the frame
        lastConverted = converted
        lastEncoded = encoded
        convertTime.record(converted &- takenTime)
        encodeTime.record(encoded &- converted)
        captureToEncoded.record(encoded &- frame.metadata.captureTime)
        recentCaptureToEncoded.record(encoded &- frame.metadata.captureTime)
        stats.frames = encoder.framesEncoded
        stats.keyframes = encoder.keyframes
        stats.width = input.width
        stats.height = input.height
        stats.threads = encoder.threads
    }

    /// Capture → encoded over the frames since the last call (a window of the run), then starts a new window.
    public func takeRecentLatency() -> LatencySummary {
        let summary = recentCaptureToEncoded.summary
        recentCaptureToEncoded = LatencyHistogram()
        return summary
    }

    /// Makes the next frame a keyframe.
    public func requestKeyframe() { encoder.requestKeyframe() }

    /// Statistics with current percentiles.
    public var summary: EncodeStats {
        var s = stats
        s.convert = convertTime.summary
        s.encode = encodeTime.summary
        s.captureToEncoded = captureToEncoded.summary
        s.captureToEncodedBins = captureToEncoded.bins()
        return s
    }

    /// Closes the recording (writes its frame count).
    public func finish() { recorder?.finish() }
}

/// What a share's encoder did.
public struct EncodeStats: Sendable, Codable {
    public var frames: UInt64 = 0
    public var keyframes: UInt64 = 0
    public var bytes: UInt64 = 0
    public var width = 0
    public var height = 0
    public var threads = 0
    /// Taken → converted, converted → encoded, captured → encoded (µs).
    public var convert = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    public var encode = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    public var captureToEncoded = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    /// Captured → encoded as a distribution (four ranges per power of two).
    public var captureToEncodedBins: [LatencyBin] = []
}
