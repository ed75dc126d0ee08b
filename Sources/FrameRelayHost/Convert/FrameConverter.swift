import Dispatch
internal import CYuv
import FrameRelayFrames
import FrameRelayRing

/// Turns a frame taken from the ring into what the encoder reads, copying
/// only when it must: upright I420 and NV12 go to the encoder straight from
/// the slot; BGRA is converted (libyuv), JPEG decoded (turbojpeg), rotated
/// frames turned upright and large frames scaled down (libyuv), each into a
/// buffer allocated once per size.
public final class FrameConverter {
    /// The largest picture to encode; larger frames are scaled down to fit,
    /// keeping the aspect ratio and even dimensions.
    public let maxSize: (width: Int, height: Int)?
    private var converted: PixelBuffer?
    private var rotated: PixelBuffer?
    private var mirrored: PixelBuffer?
    private var scaled: PixelBuffer?
    private var decoded: PixelBuffer?
    private var jpeg: JPEGDecoder?

    /// Horizontal bands converted in parallel (1: on the calling thread only).
    public let bands: Int

    /// The bands for a share: the machine's cores (up to 4) when it is the
    /// only share, one when many shares share the machine.
    public static func bands(concurrentEncoders: Int, cores: Int) -> Int {
        concurrentEncoders == 1 ? max(1, min(cores, 4)) : 1
    }

    /// `bands`: see ``bands(concurrentEncoders:cores:)``.
    public init(maxSize: (width: Int, height: Int)? = nil, bands: Int = 1) {
        self.maxSize = maxSize
        self.bands = max(1, bands)
    }

    /// Whether a frame is scaled down before it is encoded.
    public func scales(_ m: FrameMetadata) -> Bool {
        guard let maxSize else { return false }
        let (w, h) = m.orientation.swapsDimensions ? (m.height, m.width) : (m.width, m.height)
        return w > maxSize.width || h > maxSize.height
    }

    /// The encoder input for `frame`, valid until the next call (and, when
    /// zero-copy, only while the frame is). `only`: a BGRA frame is
    /// converted in these macroblocks only (the producer said the rest is
    /// the picture converted before; the caller encodes from its own copy).
    public func convert(_ frame: FrameView, only region: PixelRegion? = nil) throws -> EncoderInput {
        let m = frame.metadata
        var picture: PixelBuffer?
        var input: EncoderInput

        switch m.format {
        case .i420:
            input = EncoderInput(width: m.width, height: m.height, format: .i420,
                                 planes: (frame.plane(0), frame.plane(1), frame.plane(2)), strides: m.planes.strides)
        case .nv12:
            input = EncoderInput(width: m.width, height: m.height, format: .nv12,
                                 planes: (frame.plane(0), frame.plane(1), nil), strides: m.planes.strides)
        case .bgra:
            let out = try reuse(&converted, m.width, m.height, .i420)
            if let region {
                convertBGRA(frame.plane(0), stride: m.planes.strides.0, width: m.width, height: m.height, region: region, into: out)
            } else {
                convertBGRA(frame.plane(0), stride: m.planes.strides.0, width: m.width, height: m.height, into: out)
            }
            picture = out
            input = out.encoderInput
        case .jpeg:
            do {
                picture = try decodeJPEG(UnsafeRawBufferPointer(start: frame.payload, count: m.payloadSize), m)
            } catch {
                // A turbojpeg handle that failed on one frame fails the next ones
                // with the same error: the next frame starts on a fresh one.
                jpeg = nil
                throw error
            }
            input = picture!.encoderInput
        }

        if m.orientation != .up {
            input = try upright(input, orientation: m.orientation)
        }
        if let maxSize, input.width > maxSize.width || input.height > maxSize.height {
            input = try scaleDown(input, to: maxSize)
        }
        return input
    }

    /// A JPEG frame decoded (turbojpeg) to I420, straight when it is 4:2:0,
    /// through BGRA otherwise; its header must agree with the metadata.
    private func decodeJPEG(_ bytes: UnsafeRawBufferPointer, _ m: FrameMetadata) throws -> PixelBuffer {
        if jpeg == nil { jpeg = try JPEGDecoder() }
        let header = try jpeg!.header(bytes)
        guard header.width == m.width, header.height == m.height else {
            throw CodecError.invalidSetting("JPEG frame \(m.frameNumber) is \(header.width)x\(header.height), metadata says \(m.width)x\(m.height)")
        }
        let out = try reuse(&converted, m.width, m.height, .i420)
        if header.is420 {
            try jpeg!.decode(bytes, into: out)
        } else {
            let rgb = try reuse(&decoded, m.width, m.height, .bgra)
            try jpeg!.decode(bytes, into: rgb)
            ARGBToI420(y(rgb, 0), s(rgb, 0), y(out, 0), s(out, 0), y(out, 1), s(out, 1), y(out, 2), s(out, 2), Int32(m.width), Int32(m.height))
        }
        return out
    }

    /// BGRA → I420 with libyuv; large pictures in `bands` horizontal bands
    /// converted at once on Dispatch's worker threads (libyuv itself is
    /// single-threaded, and a 1080p conversion is most of the relay's cost).
    private func convertBGRA(_ source: UnsafeRawPointer, stride: Int, width: Int, height: Int, into out: PixelBuffer) {
        // Eight bands a core: Dispatch hands them out one by one, so a worker
        // thread that wakes late takes fewer and the caller never waits on it.
        let bands = width * height >= 1280 * 720 ? self.bands * 8 : 1
        let job = BGRABands(
            source: source, stride: stride, width: width, height: height, rowsPerBand: (height / bands + 1) & ~1,
            y: y(out, 0), u: y(out, 1), v: y(out, 2), strides: (out.stride(0), out.stride(1), out.stride(2)))
        if bands == 1 {
            job.convert(band: 0)
        } else {
            DispatchQueue.concurrentPerform(iterations: bands) { job.convert(band: $0) }
        }
    }

    /// BGRA → I420 of the macroblocks `region` touches, on this thread.
    private func convertBGRA(_ source: UnsafeRawPointer, stride: Int, width: Int, height: Int, region: PixelRegion, into out: PixelBuffer) {
        for i in 0..<region.count {
            let blocks = region[i].macroblocks(width: width, height: height)
            let x = blocks.column * 16, top = blocks.row * 16
            let w = min(width - x, blocks.columns * 16), h = min(height - top, blocks.rows * 16)
            guard w > 0, h > 0 else { continue }
            ARGBToI420(source.advanced(by: top * stride + 4 * x).assumingMemoryBound(to: UInt8.self), Int32(stride),
                       y(out, 0) + top * out.stride(0) + x, s(out, 0), y(out, 1) + top / 2 * out.stride(1) + x / 2, s(out, 1),
                       y(out, 2) + top / 2 * out.stride(2) + x / 2, s(out, 2), Int32(w), Int32(h))
        }
    }

    /// Turns the picture upright (and unmirrors it) into an I420 buffer.
    private func upright(_ input: EncoderInput, orientation: Orientation) throws -> EncoderInput {
        let degrees = orientation.clockwiseDegreesToUpright
        let (w, h) = orientation.swapsDimensions ? (input.height, input.width) : (input.width, input.height)
        let mode = RotationMode(rawValue: UInt32(degrees))
        let sw = Int32(input.width), sh = Int32(input.height)
        // Mirroring first, then rotating, undoes what the device did (rotate, then mirror).
        var source = input
        if orientation.isMirrored {
            if input.format == .nv12 {
                let flat = try reuse(&converted, input.width, input.height, .i420)
                NV12ToI420(p(input, 0), Int32(input.strides.0), p(input, 1), Int32(input.strides.1),
                           y(flat, 0), s(flat, 0), y(flat, 1), s(flat, 1), y(flat, 2), s(flat, 2), sw, sh)
                source = flat.encoderInput
            }
            let flipped = try reuse(&mirrored, input.width, input.height, .i420)
            I420Mirror(p(source, 0), Int32(source.strides.0), p(source, 1), Int32(source.strides.1), p(source, 2), Int32(source.strides.2),
                       y(flipped, 0), s(flipped, 0), y(flipped, 1), s(flipped, 1), y(flipped, 2), s(flipped, 2), sw, sh)
            source = flipped.encoderInput
            if degrees == 0 { return source }
        }
        let out = try reuse(&rotated, w, h, .i420)
        if source.format == .nv12 {
            NV12ToI420Rotate(p(source, 0), Int32(source.strides.0), p(source, 1), Int32(source.strides.1),
                             y(out, 0), s(out, 0), y(out, 1), s(out, 1), y(out, 2), s(out, 2), sw, sh, mode)
        } else {
            I420Rotate(p(source, 0), Int32(source.strides.0), p(source, 1), Int32(source.strides.1), p(source, 2), Int32(source.strides.2),
                       y(out, 0), s(out, 0), y(out, 1), s(out, 1), y(out, 2), s(out, 2), sw, sh, mode)
        }
        return out.encoderInput
    }

    /// Scales down to fit `limit`, keeping the aspect ratio, with even dimensions.
    private func scaleDown(_ input: EncoderInput, to limit: (width: Int, height: Int)) throws -> EncoderInput {
        let factor = min(Double(limit.width) / Double(input.width), Double(limit.height) / Double(input.height))
        let w = max(2, Int(Double(input.width) * factor) & ~1), h = max(2, Int(Double(input.height) * factor) & ~1)
        var source = input
        if input.format == .nv12 {
            let flat = try reuse(&converted, input.width, input.height, .i420)
            NV12ToI420(p(input, 0), Int32(input.strides.0), p(input, 1), Int32(input.strides.1),
                       y(flat, 0), s(flat, 0), y(flat, 1), s(flat, 1), y(flat, 2), s(flat, 2), Int32(input.width), Int32(input.height))
            source = flat.encoderInput
        }
        let out = try reuse(&scaled, w, h, .i420)
        I420Scale(p(source, 0), Int32(source.strides.0), p(source, 1), Int32(source.strides.1), p(source, 2), Int32(source.strides.2),
                  Int32(source.width), Int32(source.height),
                  y(out, 0), s(out, 0), y(out, 1), s(out, 1), y(out, 2), s(out, 2), Int32(w), Int32(h), kFilterBox)
        return out.encoderInput
    }

    private func reuse(_ slot: inout PixelBuffer?, _ width: Int, _ height: Int, _ format: PixelFormat) throws -> PixelBuffer {
        if let buffer = slot, buffer.width == width, buffer.height == height, buffer.format == format { return buffer }
        let buffer = try PixelBuffer(width: width, height: height, format: format)
        slot = buffer
        return buffer
    }

    private func y(_ b: PixelBuffer, _ i: Int) -> UnsafeMutablePointer<UInt8> { b.plane(i).assumingMemoryBound(to: UInt8.self) }
    private func s(_ b: PixelBuffer, _ i: Int) -> Int32 { Int32(b.stride(i)) }
    private func p(_ input: EncoderInput, _ i: Int) -> UnsafePointer<UInt8> {
        let plane = i == 0 ? input.planes.0 : (i == 1 ? input.planes.1 : input.planes.2!)
        return plane.assumingMemoryBound(to: UInt8.self)
    }
}

extension PixelBuffer {
    /// This I420 or NV12 buffer as encoder input.
    var encoderInput: EncoderInput { EncoderInput(self) }
}

/// One BGRA → I420 conversion cut into bands of even rows, so that each
/// band's chroma rows are its own.
private struct BGRABands: @unchecked Sendable {
    // @unchecked Sendable: every band reads its own source rows and writes
    // its own destination rows; the caller waits for all bands to finish.
    let source: UnsafeRawPointer
    let stride: Int
    let width: Int
    let height: Int
    let rowsPerBand: Int
    let y: UnsafeMutablePointer<UInt8>
    let u: UnsafeMutablePointer<UInt8>
    let v: UnsafeMutablePointer<UInt8>
    let strides: (Int, Int, Int)

    func convert(band: Int) {
        let top = band * rowsPerBand
        let rows = min(rowsPerBand, height - top)
        guard rows > 0 else { return }
        ARGBToI420(source.advanced(by: top * stride).assumingMemoryBound(to: UInt8.self), Int32(stride),
                   y + top * strides.0, Int32(strides.0), u + top / 2 * strides.1, Int32(strides.1),
                   v + top / 2 * strides.2, Int32(strides.2), Int32(width), Int32(rows))
    }
}
