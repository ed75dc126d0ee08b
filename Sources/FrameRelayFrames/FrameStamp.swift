/// A frame number written into a picture as a row of black and white cells
/// in its top-left corner, and read back after lossy coding.
///
/// 24 cells, most significant bit first; a cell is `width / 24` pixels
/// square (2 to 16), so 16×16 at 1280 wide, aligned to VP8's macroblocks.
/// The producer side draws it (`FrameStamp.stamp`, in FrameRelay); any
/// receiver that decodes reads it here.
public enum FrameStamp {
    public static let bits = 24

    /// Cell size in pixels for a picture `width` wide; nil when too narrow.
    public static func cellSize(width: Int) -> Int? {
        let cell = min(16, width / bits)
        return cell >= 2 ? cell : nil
    }

    /// Reads the number from a luma plane (`stride` bytes a row) of a
    /// picture `width` wide, by the mean of each cell's centre; `scale`: the
    /// picture is the stamped one scaled down that many times (a lower
    /// simulcast layer), its cells as many times smaller.
    public static func read(luma: UnsafeRawBufferPointer, stride: Int, width: Int, height: Int, scale: Int = 1) -> UInt64? {
        guard let whole = cellSize(width: width * scale), whole / scale >= 2, height >= whole / scale else { return nil }
        let cell = whole / scale
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
