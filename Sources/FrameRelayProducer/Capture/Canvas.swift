/// An RGB colour, converted once to the BT.601 limited-range YUV that the
/// planar formats store (the same formulas as libyuv's ARGBToI420).
import FrameRelayFrames

public struct Color: Sendable, Equatable {
    public var r: UInt8, g: UInt8, b: UInt8

    public init(_ r: UInt8, _ g: UInt8, _ b: UInt8) {
        self.r = r
        self.g = g
        self.b = b
    }

    var y: UInt8 { Self.mix(66, 129, 25, r, g, b, offset: 16) }
    var u: UInt8 { Self.mix(-38, -74, 112, r, g, b, offset: 128) }
    var v: UInt8 { Self.mix(112, -94, -18, r, g, b, offset: 128) }

    private static func mix(_ kr: Int, _ kg: Int, _ kb: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8, offset: Int) -> UInt8 {
        let sum: Int = kr * Int(r) + kg * Int(g) + kb * Int(b) + 128
        return UInt8(clamping: (sum >> 8) + offset)
    }
    /// The pixel as 32BGRA stores it, read as one little-endian word.
    var bgraWord: UInt32 { UInt32(b) | UInt32(g) << 8 | UInt32(r) << 16 | 0xFF00_0000 }

    public static let black = Color(0, 0, 0)
    public static let white = Color(255, 255, 255)
}

/// Draws filled rectangles straight into a raw-format ``PixelBuffer``
/// (BGRA, NV12 or I420), which is all a synthetic screen needs.
struct Canvas {
    let buffer: PixelBuffer
    /// Where drawing lands (x0, y0, x1, y1; even, so every 2×2 chroma block
    /// is either all in or all out): redrawing a changed area gives the
    /// same bytes as drawing everything.
    private(set) var clip: (x0: Int, y0: Int, x1: Int, y1: Int)

    init(buffer: PixelBuffer) {
        self.buffer = buffer
        clip = (0, 0, buffer.width, buffer.height)
    }

    var width: Int { buffer.width }
    var height: Int { buffer.height }

    /// Draws only inside the rectangle, widened to even edges (nil: everywhere).
    mutating func clip(to rect: PixelRect?) {
        let r = rect?.evenEdges(width: width, height: height) ?? PixelRect(x: 0, y: 0, width: width, height: height)
        clip = (r.x, r.y, r.x + r.width, r.y + r.height)
    }

    /// Whether anything drawn in the rectangle would land.
    func touches(x: Int, y: Int, width w: Int, height h: Int) -> Bool {
        x < clip.x1 && x + w > clip.x0 && y < clip.y1 && y + h > clip.y0
    }

    /// Fills the rectangle, clipped. Chroma is written for every 2×2 block
    /// the rectangle touches.
    func fill(x: Int, y: Int, width w: Int, height h: Int, _ color: Color) {
        let x0 = max(clip.x0, x), y0 = max(clip.y0, y)
        let x1 = min(clip.x1, x + w), y1 = min(clip.y1, y + h)
        guard x0 < x1, y0 < y1 else { return }
        switch buffer.format {
        case .bgra:
            let word = color.bgraWord
            for row in y0..<y1 {
                let line = (buffer.plane(0) + row * buffer.stride(0)).assumingMemoryBound(to: UInt32.self)
                (line + x0).update(repeating: word, count: x1 - x0)
            }
        case .nv12, .i420:
            let luma = color.y, lumaPlane = buffer.plane(0), lumaStride = buffer.stride(0)
            for row in y0..<y1 {
                (lumaPlane + row * lumaStride + x0).initializeMemory(as: UInt8.self, repeating: luma, count: x1 - x0)
            }
            let cx0 = x0 / 2, cx1 = (x1 + 1) / 2, cy0 = y0 / 2, cy1 = (y1 + 1) / 2
            if buffer.format == .nv12 {
                let word = UInt16(color.u) | UInt16(color.v) << 8
                for row in cy0..<cy1 {
                    let line = (buffer.plane(1) + row * buffer.stride(1)).assumingMemoryBound(to: UInt16.self)
                    (line + cx0).update(repeating: word, count: cx1 - cx0)
                }
            } else {
                let u = color.u, v = color.v
                for row in cy0..<cy1 {
                    (buffer.plane(1) + row * buffer.stride(1) + cx0).initializeMemory(as: UInt8.self, repeating: u, count: cx1 - cx0)
                    (buffer.plane(2) + row * buffer.stride(2) + cx0).initializeMemory(as: UInt8.self, repeating: v, count: cx1 - cx0)
                }
            }
        case .jpeg:
            preconditionFailure("a canvas draws raw formats; JPEG is encoded from one")
        }
    }
}
