@preconcurrency import Glibc

/// One share's frame path after the take, in one visible sequence:
/// convert if needed → encode VP8 → outputs (recording, RTP, viewers), each
/// stage's time written on the frame itself.
public final class SharePipeline {
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
    /// The share's RTP stream and live viewers, when it has them.
    public let rtp: RTPSession?
    public let viewers: FrameBroadcast?
    private var sizeWritten = false
    private(set) var stats = EncodeStats()

    /// Validates the settings and opens the recording now, so that a bad
    /// setting or an unwritable path fails before any frame arrives.
    public init(options: Options, rtp: RTPSession? = nil, viewers: FrameBroadcast? = nil) throws {
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
        self.rtp = rtp
        self.viewers = viewers
    }

    /// Converts, encodes and hands one frame to every output, stamping
    /// `frame.timing` at each stage (``FrameTiming/sent`` stays 0 when
    /// nothing went out: no RTP, or the encoder dropped the frame).
    ///
    /// A frame whose content cannot be converted or encoded (a JPEG that
    /// disagrees with its metadata, a corrupt one, a size libvpx refuses)
    /// throws ``InvalidFrame/undecodable(frameNumber:reason:)``: one bad
    /// frame, to count and skip. Anything else it throws (writing the
    /// recording) is about this host's own outputs.
    public func process(_ frame: inout HostFrame) throws {
        let metadata = frame.metadata
        let input: EncoderInput
        do {
            input = try converter.convert(frame.view)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        frame.timing.converted = MonotonicClock.now()
        if let recorder, !sizeWritten {
            recorder.setDimensions(width: input.width, height: input.height)
            sizeWritten = true
        }
        // "Encoded" is when libvpx hands over the frame, before it is recorded or sent.
        var encoded: UInt64 = 0
        var sent: UInt64 = 0
        do {
            try encoder.encode(input, captureTime: metadata.captureTime) { packet in
                if encoded == 0 { encoded = MonotonicClock.now() }
                stats.bytes += UInt64(packet.bytes.count)
                try recorder?.write(packet)
                if let rtp {
                    rtp.send(packet, captureTime: metadata.captureTime)
                    sent = MonotonicClock.now()
                }
                viewers?.append(packet, width: encoder.width, height: encoder.height)
            }
        } catch let error as CodecError {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        frame.timing.encoded = encoded == 0 ? MonotonicClock.now() : encoded  // 0: the encoder dropped the frame
        frame.timing.sent = sent
        stats.frames = encoder.framesEncoded
        stats.keyframes = encoder.keyframes
        stats.width = input.width
        stats.height = input.height
        stats.threads = encoder.threads
    }

    /// Makes the next frame a keyframe.
    public func requestKeyframe() { encoder.requestKeyframe() }

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
