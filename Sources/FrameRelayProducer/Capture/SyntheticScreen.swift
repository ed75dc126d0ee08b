@preconcurrency import Glibc
import FrameRelayFrames

/// A synthetic screen that looks and codes like real screen content: a
/// desktop, a terminal window that moves and whose text scrolls and updates,
/// a cursor, and the frame number stamped into the top-left corner so that a
/// receiver can read it back after lossy coding.
public final class SyntheticScreen: FrameSource {
    public let width: Int
    public let height: Int
    private let buffer: PixelBuffer
    private let canvas: Canvas
    private let scale: Int

    /// A screen of `width`×`height` drawn in `format` (I420, NV12 or BGRA).
    public init(width: Int, height: Int, format: PixelFormat = .i420) throws {
        precondition(format != .jpeg, "draw raw, then encode")
        self.width = width
        self.height = height
        self.buffer = try PixelBuffer(width: width, height: height, format: format)
        self.canvas = Canvas(buffer: buffer)
        self.scale = max(1, min(width, height) / 360)
    }

    public func nextFrame(number: UInt64) -> SourceFrame? {
        draw(number)
        return SourceFrame(buffer)
    }

    private func draw(_ n: UInt64) {
        let frame = Int(truncatingIfNeeded: n)
        canvas.fill(x: 0, y: 0, width: width, height: height, Color(28, 48, 84))
        // A menu bar with a clock that changes every frame.
        let bar = 10 * scale
        canvas.fill(x: 0, y: 0, width: width, height: bar, Color(220, 220, 224))
        PixelFont.draw("FRAMERELAY  FRAME \(n)", x: width / 3, y: scale * 2, scale: scale, color: .black, on: canvas)

        // A terminal window that drifts around the desktop.
        let windowWidth = width * 3 / 5, windowHeight = height * 3 / 5
        let rangeX = max(1, width - windowWidth), rangeY = max(1, height - windowHeight - bar)
        let wx = bounce(frame * 2, range: rangeX), wy = bar + bounce(frame, range: rangeY)
        canvas.fill(x: wx + 6 * scale, y: wy + 6 * scale, width: windowWidth, height: windowHeight, Color(12, 20, 36))
        canvas.fill(x: wx, y: wy, width: windowWidth, height: windowHeight, Color(16, 16, 16))
        canvas.fill(x: wx, y: wy, width: windowWidth, height: 9 * scale, Color(70, 70, 76))
        PixelFont.draw("TERMINAL - BROADCAST-SIM", x: wx + 4 * scale, y: wy + scale, scale: scale, color: .white, on: canvas)

        // Text that scrolls one line every four frames.
        let lineHeight = 9 * scale
        let lines = max(1, (windowHeight - 12 * scale) / lineHeight)
        let top = frame / 4
        for line in 0..<lines {
            let number = top + line
            let text = "$ CAPTURE \(number) OK \(number &* 7919 % 100_000) BYTES"
            PixelFont.draw(text, x: wx + 4 * scale, y: wy + 11 * scale + line * lineHeight, scale: scale, color: Color(120, 230, 120), on: canvas)
        }

        // A cursor that circles.
        let cx = width / 2 + Int(Double(width / 4) * cos(Double(frame) / 20))
        let cy = height / 2 + Int(Double(height / 4) * sin(Double(frame) / 20))
        for step in 0..<(8 * scale) {
            canvas.fill(x: cx, y: cy + step, width: max(1, step / 2 + 1), height: 1, .white)
        }
        FrameStamp.draw(n, on: canvas)
    }

    private func bounce(_ value: Int, range: Int) -> Int {
        let period = 2 * range
        let phase = value % period
        return phase < range ? phase : period - phase
    }
}

