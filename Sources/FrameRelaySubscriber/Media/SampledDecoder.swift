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
    /// (PictureID, stamp, when decoded) of each decoded picture whose stamp was readable.
    private(set) var stamps: [(picture: UInt16, stamp: UInt64, at: UInt64)] = []

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
            if let id = frame.pictureID,
                let stamp = FrameStamp.read(luma: picture.luma, stride: picture.lumaStride, width: picture.width, height: picture.height)
            {
                stamps.append((id, stamp, now))
            }
        }
        if !ok { errors += 1 }
    }
}
