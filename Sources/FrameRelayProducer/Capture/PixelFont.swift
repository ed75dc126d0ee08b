/// A 5×7 bitmap font (digits, capitals and a little punctuation) for the
/// synthetic screen's terminal text.
enum PixelFont {
    static let glyphWidth = 5
    static let glyphHeight = 7

    /// Seven rows of five bits (bit 4 is the left column) per character.
    static func rows(of character: UInt8) -> (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
        switch character {
        case UInt8(ascii: "0"): (14, 17, 19, 21, 25, 17, 14)
        case UInt8(ascii: "1"): (4, 12, 4, 4, 4, 4, 14)
        case UInt8(ascii: "2"): (14, 17, 1, 2, 4, 8, 31)
        case UInt8(ascii: "3"): (31, 2, 4, 2, 1, 17, 14)
        case UInt8(ascii: "4"): (2, 6, 10, 18, 31, 2, 2)
        case UInt8(ascii: "5"): (31, 16, 30, 1, 1, 17, 14)
        case UInt8(ascii: "6"): (6, 8, 16, 30, 17, 17, 14)
        case UInt8(ascii: "7"): (31, 1, 2, 4, 8, 8, 8)
        case UInt8(ascii: "8"): (14, 17, 17, 14, 17, 17, 14)
        case UInt8(ascii: "9"): (14, 17, 17, 15, 1, 2, 12)
        case UInt8(ascii: "A"): (14, 17, 17, 31, 17, 17, 17)
        case UInt8(ascii: "B"): (30, 17, 17, 30, 17, 17, 30)
        case UInt8(ascii: "C"): (14, 17, 16, 16, 16, 17, 14)
        case UInt8(ascii: "D"): (28, 18, 17, 17, 17, 18, 28)
        case UInt8(ascii: "E"): (31, 16, 16, 30, 16, 16, 31)
        case UInt8(ascii: "F"): (31, 16, 16, 30, 16, 16, 16)
        case UInt8(ascii: "G"): (14, 17, 16, 23, 17, 17, 15)
        case UInt8(ascii: "H"): (17, 17, 17, 31, 17, 17, 17)
        case UInt8(ascii: "I"): (14, 4, 4, 4, 4, 4, 14)
        case UInt8(ascii: "J"): (7, 2, 2, 2, 2, 18, 12)
        case UInt8(ascii: "K"): (17, 18, 20, 24, 20, 18, 17)
        case UInt8(ascii: "L"): (16, 16, 16, 16, 16, 16, 31)
        case UInt8(ascii: "M"): (17, 27, 21, 21, 17, 17, 17)
        case UInt8(ascii: "N"): (17, 17, 25, 21, 19, 17, 17)
        case UInt8(ascii: "O"): (14, 17, 17, 17, 17, 17, 14)
        case UInt8(ascii: "P"): (30, 17, 17, 30, 16, 16, 16)
        case UInt8(ascii: "Q"): (14, 17, 17, 17, 21, 18, 13)
        case UInt8(ascii: "R"): (30, 17, 17, 30, 20, 18, 17)
        case UInt8(ascii: "S"): (15, 16, 16, 14, 1, 1, 30)
        case UInt8(ascii: "T"): (31, 4, 4, 4, 4, 4, 4)
        case UInt8(ascii: "U"): (17, 17, 17, 17, 17, 17, 14)
        case UInt8(ascii: "V"): (17, 17, 17, 17, 17, 10, 4)
        case UInt8(ascii: "W"): (17, 17, 17, 21, 21, 21, 10)
        case UInt8(ascii: "X"): (17, 17, 10, 4, 10, 17, 17)
        case UInt8(ascii: "Y"): (17, 17, 17, 10, 4, 4, 4)
        case UInt8(ascii: "Z"): (31, 1, 2, 4, 8, 16, 31)
        case UInt8(ascii: ":"): (0, 12, 12, 0, 12, 12, 0)
        case UInt8(ascii: "."): (0, 0, 0, 0, 0, 12, 12)
        case UInt8(ascii: "-"): (0, 0, 0, 31, 0, 0, 0)
        case UInt8(ascii: "/"): (0, 1, 2, 4, 8, 16, 0)
        case UInt8(ascii: "$"): (4, 15, 20, 14, 5, 30, 4)
        case UInt8(ascii: ">"): (8, 4, 2, 1, 2, 4, 8)
        case UInt8(ascii: "|"): (4, 4, 4, 4, 4, 4, 4)
        default: (0, 0, 0, 0, 0, 0, 0)
        }
    }

    /// Draws `text` with its top-left at (x, y), each font pixel `scale` wide.
    static func draw(_ text: String, x: Int, y: Int, scale: Int, color: Color, on canvas: Canvas) {
        guard canvas.touches(x: x, y: y, width: canvas.width, height: glyphHeight * scale) else { return }
        var penX = x
        for character in text.utf8 {
            let glyph = rows(of: character)
            withUnsafeBytes(of: glyph) { rows in
                for (row, bits) in rows.enumerated() where bits != 0 {
                    // Each run of set pixels in the row is one rectangle.
                    var column = 0
                    while column < glyphWidth {
                        guard bits & (16 >> column) != 0 else {
                            column += 1
                            continue
                        }
                        var end = column + 1
                        while end < glyphWidth, bits & (16 >> end) != 0 { end += 1 }
                        canvas.fill(x: penX + column * scale, y: y + row * scale, width: (end - column) * scale, height: scale, color)
                        column = end
                    }
                }
            }
            penX += (glyphWidth + 1) * scale
            if penX >= canvas.width { return }
        }
    }
}
