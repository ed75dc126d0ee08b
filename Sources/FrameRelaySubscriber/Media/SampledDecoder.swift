import FrameRelayFrames
import FrameRelayRTP
import FrameRelayDecoding

/// What one subscriber in K adds: the payloads kept (``JitterBuffer``), each
/// decodable frame decoded with libvpx in the order the tracker hands them
/// out, and the frame number read from every picture's stamp, so that the
/// pixels are checked and the PictureID mapping cross-checked.
final class SampledDecoder {
    private var payloads = JitterBuffer()
    private let decoder: VP8Decoder
    private(set) var decoded: UInt64 = 0
    private(set) var errors: UInt64 = 0
    /// (PictureID, stamp, when decoded) of each decoded picture whose stamp
    /// was readable: read as the stamped picture, and as one scaled down 2
    /// and 4 times (a lower simulcast layer's; which one it was, the host's
    /// trace says: ``HostTrace/anchors(of:keyframes:)``).
    private(set) var stamps: [(picture: UInt16, stamp: Scaled, at: UInt64)] = []

    /// A stamp read at each scale a simulcast layer may have (1, 2, 4).
    struct Scaled: Equatable {
        var reads: [UInt64?]
        func at(scale: Int) -> UInt64? { scale == 1 ? reads[0] : scale == 2 ? reads[1] : scale == 4 ? reads[2] : nil }
    }

    static let smallestScaledCell = 6

    init() throws(CodecError) { decoder = try VP8Decoder() }

    /// Keeps a packet's payload for the frame it belongs to.
    func keep(_ payload: UnsafeRawBufferPointer, sequence: UInt16, timestamp: UInt32, marker: Bool) {
        _ = payloads.insert(payload, sequence: sequence, timestamp: timestamp, marker: marker)
    }

    /// Decodes a frame the tracker said is decodable at `now`.
    func decode(_ frame: FrameTracker.Frame, now: UInt64) {
        guard let whole = payloads.wholeFrame(containing: frame.firstSequence) else {
            errors += 1
            return
        }
        let bytes = payloads.assemble(whole)
        let ok = decoder.decode(bytes) { picture in
            decoded += 1
            guard let id = frame.pictureID else { return }
            // A stamp scaled down to cells under 6 pixels is not read: a layer's coding blurs it past telling.
            let reads = [1, 2, 4].map { scale in
                scale > 1 && (FrameStamp.cellSize(width: picture.width * scale) ?? 0) / scale < Self.smallestScaledCell ? nil
                    : FrameStamp.read(luma: picture.luma, stride: picture.lumaStride, width: picture.width, height: picture.height, scale: scale)
            }
            if reads[0] != nil { stamps.append((id, Scaled(reads: reads), now)) }
        }
        if !ok { errors += 1 }
    }
}
