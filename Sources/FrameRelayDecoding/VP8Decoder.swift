internal import CVpx
import FrameRelayFrames

/// A decoded picture (I420 planes), borrowed until the next decode.
public struct DecodedPicture {
    public let width: Int
    public let height: Int
    public let luma: UnsafeRawBufferPointer
    public let lumaStride: Int
    /// The chroma planes (half size, rounded up) and their stride.
    public let u: UnsafeRawPointer
    public let v: UnsafeRawPointer
    public let chromaStride: Int
}

/// Owns one libvpx VP8 decoder context.
public final class VP8Decoder {
    private var context = vpx_codec_ctx_t()
    public private(set) var errors = 0

    public init() throws(CodecError) {
        let status = cvpx_dec_init(&context)
        guard status == VPX_CODEC_OK else { throw .library("vpx_codec_dec_init", String(cString: vpx_codec_err_to_string(status))) }
    }

    deinit { vpx_codec_destroy(&context) }

    /// Whether a VP8 frame starts a keyframe (bit 0 of its frame tag is 0).
    public static func isKeyframe(_ frame: UnsafeRawBufferPointer) -> Bool {
        frame.count > 0 && frame[0] & 1 == 0
    }

    /// The picture size a keyframe declares (RFC 6386 §9.1: 14-bit width and
    /// height after the start code), or nil for another frame or a short one.
    public static func keyframeSize(_ frame: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard isKeyframe(frame), frame.count >= 10, frame[3] == 0x9d, frame[4] == 0x01, frame[5] == 0x2a else { return nil }
        return (Int(frame[6]) | Int(frame[7] & 0x3f) << 8, Int(frame[8]) | Int(frame[9] & 0x3f) << 8)
    }

    /// Decodes one frame and hands its picture to `body`; false (and one more
    /// in ``errors``) when libvpx rejects it.
    @discardableResult
    public func decode(_ frame: UnsafeRawBufferPointer, _ body: (DecodedPicture) -> Void) -> Bool {
        let status = vpx_codec_decode(&context, frame.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(frame.count), nil, 0)
        guard status == VPX_CODEC_OK else {
            errors += 1
            return false
        }
        var iterator: vpx_codec_iter_t? = nil
        while let image = vpx_codec_get_frame(&context, &iterator) {
            let width = Int(image.pointee.d_w), height = Int(image.pointee.d_h), stride = Int(image.pointee.stride.0)
            let luma = UnsafeRawBufferPointer(start: image.pointee.planes.0, count: stride * (height - 1) + width)
            body(DecodedPicture(width: width, height: height, luma: luma, lumaStride: stride,
                                u: UnsafeRawPointer(image.pointee.planes.1!), v: UnsafeRawPointer(image.pointee.planes.2!),
                                chromaStride: Int(image.pointee.stride.1)))
        }
        return true
    }
}
