/// Writes a frame number into a picture as a row of black and white cells
/// in its top-left corner, and reads it back after lossy coding.
///
/// 24 cells, most significant bit first; a cell is `width / 24` pixels
/// square (2 to 16), so 16×16 at 1280 wide, aligned to VP8's macroblocks.
public enum FrameStamp {
    public static let bits = 24

    /// Cell size in pixels for a picture `width` wide; nil when too narrow.
    public static func cellSize(width: Int) -> Int? {
        let cell = min(16, width / bits)
        return cell >= 2 ? cell : nil
    }

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

    /// Reads the number from a luma plane (`stride` bytes a row) of a
    /// picture `width` wide, by the mean of each cell's centre.
    public static func read(luma: UnsafeRawBufferPointer, stride: Int, width: Int, height: Int) -> UInt64? {
        guard let cell = cellSize(width: width), height >= cell else { return nil }
        let inset = cell / 4
        var number: UInt64 = 0
        for bit in 0..<bits {
            var sum = 0, count = 0
            for y in inset..<(cell - inset) {
                for x in (bit * cell + inset)..<((bit + 1) * cell - inset) {
                    sum += Int(luma[y * stride + x])
                    count += 1
                }
            }
            number = number << 1 | (sum / count > 128 ? 1 : 0)
        }
        return number
    }
}
