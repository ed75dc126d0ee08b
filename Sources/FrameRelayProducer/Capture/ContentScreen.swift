import FrameRelayFrames
/// Screen content that behaves like real use, for sizing and for the
/// content-aware encoder: most of a real screen is still most of the time.
///
/// Each model draws a desktop with a document window and a second window,
/// then changes only what its kind of use changes, at 30 frames/s:
/// - `still`: nothing after the first frame.
/// - `typing`: two characters a frame into the document, a caret blinking twice a second.
/// - `scrolling`: the document scrolls 12 rows a frame for 2/3 s, then rests 4/3 s.
/// - `video`: a 640×360 region (scaled with the screen) plays moving pictures.
/// - `drag`: the second window is dragged across the desktop.
/// - `mixed`: a scripted minute, 10 s each: typing, still, scrolling, video, drag, still.
///
/// Each picture carries a frame stamp (``FrameStamp``) as the synthetic
/// screen's do: the number of the frame that last changed the picture (a
/// stamp that counted every frame would itself change every frame), so a
/// receiver reads the number of the frame whose content it shows.
public final class ContentScreen: FrameSource {
    public enum Content: String, CaseIterable, Sendable {
        case still, typing, scrolling, video, drag, mixed
    }

    public let content: Content
    public let width: Int
    public let height: Int
    private let buffer: PixelBuffer
    private var canvas: Canvas
    private let scale: Int
    /// What the picture shows: redrawn only when one of these moves.
    private struct State: Equatable {
        var typed = 0
        var caret = true
        var scroll = 0
        var video: Int?
        var drag = 0
    }
    private var state = State()
    private var drawn: State?
    private var step = 0

    /// The content's phase at step `n` (frames since the start), for `mixed`.
    static func phase(_ content: Content, step n: Int) -> Content {
        guard content == .mixed else { return content }
        return [Content.typing, .still, .scrolling, .video, .drag, .still][(n / 300) % 6]
    }

    /// A screen whose script starts `start` frames in (the load test starts
    /// each share at another point of the minute, as independent users
    /// would be; frame stamps still count from 0).
    public init(_ content: Content, width: Int, height: Int, format: PixelFormat = .i420, start: Int = 0) throws {
        precondition(format != .jpeg, "draw raw, then encode")
        precondition(start >= 0)
        self.content = content
        self.width = width
        self.height = height
        buffer = try PixelBuffer(width: width, height: height, format: format)
        canvas = Canvas(buffer: buffer)
        scale = max(1, min(width, height) / 360)
        for _ in 0..<start { advance() }
    }

    public func nextFrame(number: UInt64) -> SourceFrame? {
        advance()
        var damage = Damage.none
        if drawn != state {
            damage = .unknown
            // Only where something moved: the same bytes as drawing everything, for a fraction of the work.
            let area = drawn.flatMap(changedArea)
            canvas.clip(to: area)
            if let area {
                var region = PixelRegion()
                region.add(area.evenEdges(width: width, height: height))
                region.add(FrameStamp.area(width: width, height: height))
                damage = .within(region)
            }
            draw()
            canvas.clip(to: nil)
            drawn = state
            // The stamp names the frame that last changed the picture: a stamp
            // that counted every frame would itself be a change.
            FrameStamp.draw(number, on: canvas)
        }
        return SourceFrame(buffer, damage: damage)
    }

    private func advance() {
        defer { step += 1 }
        guard step > 0 else { return }
        switch Self.phase(content, step: step) {
        case .still, .mixed:
            break
        case .typing:
            state.typed += 2
            state.caret = (step / 15) % 2 == 0
        case .scrolling:
            if step % 60 < 20 { state.scroll += 12 * scale / 2 }
        case .video:
            state.video = (state.video ?? 0) + 1
        case .drag:
            state.drag += 1
        }
    }

    // The layout, in pixels.
    private var bar: Int { 10 * scale }
    private var line: Int { 9 * scale }
    private var document: (x: Int, y: Int, width: Int, height: Int) {
        (width / 20, bar + height / 20, width * 11 / 20, height * 3 / 4)
    }
    private var videoRect: (x: Int, y: Int, width: Int, height: Int) {
        let w = min(width / 2, 640 * scale / 2), h = w * 9 / 16
        return (width - w - width / 20, bar + height / 10, w, h)
    }

    private typealias Rect = (x: Int, y: Int, width: Int, height: Int)

    /// The document as `state` shows it: where its text starts, the first
    /// line in view and how far it is scrolled past it, the caret's line.
    private func documentView(_ state: State) -> (top: Int, columns: Int, visible: Int, prose: Int, caretLine: Int, first: Int, offset: Int) {
        let d = document
        let top = d.y + line + 4 * scale
        let columns = max(1, (d.width - 8 * scale) / (6 * scale))
        let visible = max(2, (d.y + d.height - top) / line)
        // The document: generated prose, the typed text from line `prose` on
        // (the view follows the caret as an editor does), more prose below.
        let prose = visible / 2
        let caretLine = prose + state.typed / columns
        let scroll = state.scroll + max(0, caretLine - (visible - 1)) * line
        return (top, columns, visible, prose, caretLine, scroll / line, scroll % line)
    }

    /// The second window, with its shadow, as `state` places it.
    private func windowRect(_ state: State) -> Rect {
        let w = width * 3 / 10, h = height * 3 / 10
        let x = Self.bounce(width * 6 / 10 + state.drag * 8 * scale / 2, range: max(1, width - w))
        let y = bar + Self.bounce(height * 6 / 10 + state.drag * 4 * scale / 2, range: max(1, height - h - bar))
        return (x, y, w + 5 * scale, h + 5 * scale)
    }

    /// Everything that differs between the picture of `old` and of the
    /// current state, as one rectangle; nil when the document scrolled (redraw it all).
    private func changedArea(from old: State) -> PixelRect? {
        var area: PixelRect?
        func add(_ r: Rect) {
            let rect = PixelRect(x: r.x, y: r.y, width: r.width, height: r.height)
            area = area.map { $0.union(rect) } ?? rect
        }
        let before = documentView(old), now = documentView(state)
        if before.first != now.first || before.offset != now.offset { return nil }
        if old.typed != state.typed || old.caret != state.caret {
            // The caret's lines, from where it was to where it is.
            let from = min(before.caretLine, now.caretLine), to = max(before.caretLine, now.caretLine)
            add((document.x, now.top + (from - now.first) * line - now.offset, document.width, (to - from + 1) * line))
        }
        if old.video != state.video { add(videoRect) }
        if old.drag != state.drag {
            add(windowRect(old))
            add(windowRect(state))
        }
        return area
    }

    private func draw() {
        canvas.fill(x: 0, y: 0, width: width, height: height, Color(36, 52, 80))
        canvas.fill(x: 0, y: 0, width: width, height: bar, Color(226, 226, 230))
        PixelFont.draw("FILE  EDIT  VIEW  WINDOW  HELP", x: 4 * scale, y: 2 * scale, scale: scale, color: .black, on: canvas)
        drawDocument()
        if let frame = state.video, canvas.touches(x: videoRect.x, y: videoRect.y, width: videoRect.width, height: videoRect.height) { drawVideo(frame) }
        drawSecondWindow()
    }

    /// A text document: wrapped lines of generated prose, the typed text at its end, scrolled by `state.scroll` rows.
    private func drawDocument() {
        let d = document
        canvas.fill(x: d.x, y: d.y, width: d.width, height: d.height, Color(250, 250, 248))
        canvas.fill(x: d.x, y: d.y, width: d.width, height: line + 2 * scale, Color(200, 200, 206))
        PixelFont.draw("NOTES.TXT", x: d.x + 4 * scale, y: d.y + scale, scale: scale, color: .black, on: canvas)
        let (top, columns, visible, prose, caretLine, first, offset) = documentView(state)
        for row in 0...visible {
            let index = first + row
            let y = top + row * line - offset
            guard y >= top, y + line <= d.y + d.height, canvas.touches(x: d.x, y: y, width: d.width, height: line) else { continue }
            let text: String
            if index < prose || index > caretLine || state.typed == 0 {
                text = Self.prose(index, columns: columns)
            } else if index < caretLine {
                text = Self.typedText(from: (index - prose) * columns, count: columns)
            } else {
                text = Self.typedText(from: (index - prose) * columns, count: state.typed % columns) + (state.caret ? "|" : "")
            }
            PixelFont.draw(text, x: d.x + 4 * scale, y: y, scale: scale, color: Color(30, 30, 30), on: canvas)
        }
    }

    private static let words = ["SCREEN", "FRAME", "RING", "HOST", "SHARE", "VIDEO", "THE", "OF", "AND", "A", "TO", "LATENCY", "ENCODE", "RELAY", "1080", "720"]

    /// Line `index` of the generated document, at most `columns` characters.
    static func prose(_ index: Int, columns: Int) -> String {
        var text = ""
        var seed = UInt32(truncatingIfNeeded: index &* 2_654_435_761 &+ 7)
        while true {
            seed = seed &* 1_103_515_245 &+ 12_345
            let word = words[Int(seed >> 16) % words.count]
            guard text.count + word.count + 1 <= columns else { return text }
            text += (text.isEmpty ? "" : " ") + word
        }
    }

    /// `count` characters of the typed text from position `start`.
    static func typedText(from start: Int, count: Int) -> String {
        let sentence = Array("THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG 0123456789. ")
        return String((0..<count).map { sentence[(start + $0) % sentence.count] })
    }

    /// Moving pictures: 8×8 blocks whose colours drift with the frame, and a ball crossing them.
    private func drawVideo(_ frame: Int) {
        let v = videoRect
        let block = 8
        for by in 0..<(v.height / block) {
            for bx in 0..<(v.width / block) {
                let phase = bx * 7 + by * 5 + frame * 3
                let r = UInt8(truncatingIfNeeded: 128 + (phase % 96)), g = UInt8(truncatingIfNeeded: 60 + ((bx + frame) * 11 % 120))
                let b = UInt8(truncatingIfNeeded: 90 + ((by * 13 + frame * 2) % 140))
                canvas.fill(x: v.x + bx * block, y: v.y + by * block, width: block, height: block, Color(r, g, b))
            }
        }
        let ball = v.height / 5
        let x = v.x + (frame * 9) % max(1, v.width - ball), y = v.y + (frame * 5) % max(1, v.height - ball)
        canvas.fill(x: x, y: y, width: ball, height: ball, Color(250, 220, 40))
    }

    /// A small window: dragged along a bouncing path with `drag`, otherwise where it rests.
    private func drawSecondWindow() {
        let w = width * 3 / 10, h = height * 3 / 10
        let (x, y, shadowed, shadowedHeight) = windowRect(state)
        guard canvas.touches(x: x, y: y, width: shadowed, height: shadowedHeight) else { return }
        canvas.fill(x: x + 5 * scale, y: y + 5 * scale, width: w, height: h, Color(20, 30, 48))
        canvas.fill(x: x, y: y, width: w, height: h, Color(16, 16, 16))
        canvas.fill(x: x, y: y, width: w, height: line + 2 * scale, Color(70, 70, 76))
        PixelFont.draw("TERMINAL", x: x + 4 * scale, y: y + scale, scale: scale, color: .white, on: canvas)
        for row in 0..<max(0, (h - line * 2) / line) {
            PixelFont.draw("$ BUILD \(row) OK", x: x + 4 * scale, y: y + line * (row + 2), scale: scale, color: Color(120, 230, 120), on: canvas)
        }
    }

    private static func bounce(_ value: Int, range: Int) -> Int {
        let period = 2 * range
        let phase = value % period
        return phase < range ? phase : period - phase
    }
}
