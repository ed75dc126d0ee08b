import FrameRelayFrames
import Testing

/// The conversions a screen cast draws with: a rectangle of a picture that
/// lies elsewhere in memory (PipeWire's buffer), plane by plane, into a
/// picture of ours; and a pointer blended over a BGRA picture.
struct PixelConversionTests {
    /// An 8x4 I420 picture whose every byte says where it is: Y = 10·row + column,
    /// U = 100 + 10·row + column, V = 200 + 10·row + column (chroma 4x2).
    private static let i420: (y: [UInt8], u: [UInt8], v: [UInt8]) = (
        (0..<4).flatMap { row in (0..<8).map { UInt8(10 * row + $0) } },
        (0..<2).flatMap { row in (0..<4).map { UInt8(100 + 10 * row + $0) } },
        (0..<2).flatMap { row in (0..<4).map { UInt8(200 + 10 * row + $0) } })

    private func bytes(_ picture: PixelBuffer, plane: Int, x: Int, y: Int) -> UInt8 {
        picture.plane(plane).load(fromByteOffset: y * picture.stride(plane) + x, as: UInt8.self)
    }

    /// The rectangle from (2, 2), 4x2, of the I420 picture, given as pointers at
    /// its corner in each plane (as the capture does), lands at (2, 2) of an
    /// I420 picture and of an NV12 one, byte for byte, and nowhere else.
    @Test(arguments: [PixelFormat.i420, .nv12])
    func aYUVRectangleLandsWhereAsked(_ format: PixelFormat) throws {
        let target = try PixelBuffer(width: 8, height: 4, format: format)
        let source = Self.i420
        source.y.withUnsafeBytes { y in
            source.u.withUnsafeBytes { u in
                source.v.withUnsafeBytes { v in
                    // Row 2, column 2 of luma; row 1, column 1 of chroma.
                    PixelConversion.convert(.i420, planes: (y.baseAddress! + 2 * 8 + 2, u.baseAddress! + 4 + 1, v.baseAddress! + 4 + 1),
                                            strides: (8, 4, 4), into: target, at: PixelRect(x: 2, y: 2, width: 4, height: 2))
                }
            }
        }
        for row in 0..<4 {
            for column in 0..<8 {
                let inside = (2..<6).contains(column) && row >= 2
                #expect(bytes(target, plane: 0, x: column, y: row) == (inside ? UInt8(10 * row + column) : 0), "Y at \(column),\(row)")
            }
        }
        // Chroma of the rectangle: columns 1...2 of chroma row 1.
        for column in 0..<4 {
            let inside = (1...2).contains(column)
            let u = format == .i420 ? bytes(target, plane: 1, x: column, y: 1) : bytes(target, plane: 1, x: 2 * column, y: 1)
            let v = format == .i420 ? bytes(target, plane: 2, x: column, y: 1) : bytes(target, plane: 1, x: 2 * column + 1, y: 1)
            #expect(u == (inside ? UInt8(110 + column) : 0) && v == (inside ? UInt8(210 + column) : 0), "U, V at chroma \(column),1: \(u), \(v)")
        }
    }

    /// NV12 in, I420 out: the interleaved chroma split into its planes.
    @Test func nv12ChromaIsSplitIntoI420Planes() throws {
        let target = try PixelBuffer(width: 4, height: 2, format: .i420)
        let y = [UInt8](repeating: 50, count: 8), uv: [UInt8] = [1, 2, 3, 4]
        y.withUnsafeBytes { y in
            uv.withUnsafeBytes { uv in
                PixelConversion.convert(.nv12, planes: (y.baseAddress!, uv.baseAddress!, nil), strides: (4, 4, 0), into: target,
                                        at: PixelRect(x: 0, y: 0, width: 4, height: 2))
            }
        }
        #expect([bytes(target, plane: 1, x: 0, y: 0), bytes(target, plane: 1, x: 1, y: 0)] == [1, 3])
        #expect([bytes(target, plane: 2, x: 0, y: 0), bytes(target, plane: 2, x: 1, y: 0)] == [2, 4])
        #expect(bytes(target, plane: 0, x: 3, y: 1) == 50)
    }

    /// A premultiplied pointer over gray: opaque red replaces the pixel, half
    /// transparent red (128, premultiplied) mixes with it, transparent leaves it.
    @Test func aPremultipliedPointerBlendsOverThePicture() throws {
        let picture = try PixelBuffer(width: 4, height: 1, format: .bgra)
        for x in 0..<4 { picture.plane(0).storeBytes(of: 0xFF80_8080 as UInt32, toByteOffset: x * 4, as: UInt32.self) }
        // B, G, R, A: opaque red, half red, nothing.
        let pointer: [UInt8] = [0, 0, 255, 255, 0, 0, 128, 128, 0, 0, 0, 0]
        pointer.withUnsafeBytes { PixelConversion.blend(premultiplied: $0.baseAddress!, stride: 12, over: picture, at: PixelRect(x: 1, y: 0, width: 3, height: 1)) }
        func pixel(_ x: Int) -> [Int] { (0..<3).map { Int(bytes(picture, plane: 0, x: x * 4 + $0, y: 0)) } }
        #expect(pixel(0) == [128, 128, 128])
        #expect(pixel(1) == [0, 0, 255])
        let half = pixel(2)  // 128 + 128·(1 − 128/255) ≈ 192 red, 128·(127/255) ≈ 64 green and blue
        #expect(abs(half[2] - 192) <= 2 && abs(half[1] - 64) <= 2 && abs(half[0] - 64) <= 2, "\(half)")
        #expect(pixel(3) == [128, 128, 128])
    }

    @Test func rectanglesIntersect() {
        let a = PixelRect(x: 0, y: 0, width: 10, height: 10)
        #expect(a.intersection(PixelRect(x: 5, y: -3, width: 10, height: 5)) == PixelRect(x: 5, y: 0, width: 5, height: 2))
        #expect(a.intersection(PixelRect(x: 10, y: 0, width: 4, height: 4)).isEmpty)
        #expect(a.intersection(PixelRect(x: -20, y: -20, width: 5, height: 5)).isEmpty)
    }
}
