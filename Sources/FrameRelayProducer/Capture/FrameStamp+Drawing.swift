import FrameRelayFrames

/// Drawing the frame number (``FrameStamp``) into the pictures a source makes.
extension FrameStamp {
    /// Where the stamp lies in a `width × height` picture, to even edges
    /// (its chroma's 2×2 blocks); empty when it has none.
    static func area(width: Int, height: Int) -> PixelRect {
        guard let cell = cellSize(width: width), height >= cell else { return .empty }
        return PixelRect(x: 0, y: 0, width: bits * cell, height: cell).evenEdges(width: width, height: height)
    }

    /// Stamps `number` into a raw-format buffer (I420, NV12 or BGRA).
    public static func stamp(_ number: UInt64, into buffer: PixelBuffer) {
        draw(number, on: Canvas(buffer: buffer))
    }

    static func draw(_ number: UInt64, on canvas: Canvas) {
        guard let cell = cellSize(width: canvas.width), canvas.height >= cell else { return }
        for bit in 0..<bits {
            let on = (number >> UInt64(bits - 1 - bit)) & 1 == 1
            canvas.fill(x: bit * cell, y: 0, width: cell, height: cell, on ? .white : .black)
        }
    }
}
