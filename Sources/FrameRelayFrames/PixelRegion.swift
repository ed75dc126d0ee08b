/// A rectangle of a picture, in pixels.
public struct PixelRect: Sendable, Equatable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// No pixels.
    public static let empty = PixelRect(x: 0, y: 0, width: 0, height: 0)

    public var isEmpty: Bool { width <= 0 || height <= 0 }
    var area: Int { isEmpty ? 0 : width * height }

    /// Whether every pixel of `other` is in this rectangle.
    public func contains(_ other: PixelRect) -> Bool {
        other.x >= x && other.y >= y && other.x + other.width <= x + width && other.y + other.height <= y + height
    }

    /// The smallest rectangle holding both.
    public func union(_ other: PixelRect) -> PixelRect {
        if isEmpty { return other }
        if other.isEmpty { return self }
        let x0 = min(x, other.x), y0 = min(y, other.y)
        return PixelRect(x: x0, y: y0, width: max(x + width, other.x + other.width) - x0, height: max(y + height, other.y + other.height) - y0)
    }

    /// The pixels in both (empty when none).
    package func intersection(_ other: PixelRect) -> PixelRect {
        let x0 = max(x, other.x), y0 = max(y, other.y)
        let x1 = min(x + width, other.x + other.width), y1 = min(y + height, other.y + other.height)
        return x1 > x0 && y1 > y0 ? PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0) : .empty
    }

    /// The rectangle widened to even edges (every 2×2 chroma block it
    /// touches), cut to a `width × height` picture.
    package func evenEdges(width pictureWidth: Int, height pictureHeight: Int) -> PixelRect {
        let x0 = max(0, x) & ~1, y0 = max(0, y) & ~1
        let x1 = min(pictureWidth, (x + width + 1) & ~1), y1 = min(pictureHeight, (y + height + 1) & ~1)
        return PixelRect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    /// The rectangle widened to whole 16×16 macroblocks and cut to a `width × height` picture.
    package func macroblocks(width pictureWidth: Int, height pictureHeight: Int) -> (column: Int, row: Int, columns: Int, rows: Int) {
        let x0 = max(0, x) / 16, y0 = max(0, y) / 16
        let x1 = (min(pictureWidth, x + width) + 15) / 16, y1 = (min(pictureHeight, y + height) + 15) / 16
        return (x0, y0, max(0, x1 - x0), max(0, y1 - y0))
    }
}

/// Where a picture changed: up to ``maxRects`` rectangles (a caret and a
/// clock apart on a screen need not make one box of everything between).
/// A rectangle that would be one too many is merged into the one it grows
/// least. Nothing is allocated: it travels in a ring slot's header.
public struct PixelRegion: Sendable, Equatable {
    public static let maxRects = 4
    private var storage: (PixelRect, PixelRect, PixelRect, PixelRect)
    /// How many rectangles it holds.
    public private(set) var count = 0

    /// An empty region: nothing changed.
    public init() { storage = (.empty, .empty, .empty, .empty) }

    /// A region of these rectangles (merged down to ``maxRects``).
    public init(_ rects: [PixelRect]) {
        self.init()
        for rect in rects { add(rect) }
    }

    public var isEmpty: Bool { count == 0 }

    /// Rectangle `index` (`0..<count`).
    public subscript(index: Int) -> PixelRect {
        get {
            precondition(index >= 0 && index < count)
            return withUnsafeBytes(of: storage) { $0.load(fromByteOffset: index * MemoryLayout<PixelRect>.stride, as: PixelRect.self) }
        }
        set {
            precondition(index >= 0 && index < count)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: newValue, toByteOffset: index * MemoryLayout<PixelRect>.stride, as: PixelRect.self) }
        }
    }

    /// Adds `rect` (nothing when it is empty or already within one of the region's rectangles).
    public mutating func add(_ rect: PixelRect) {
        guard !rect.isEmpty else { return }
        for i in 0..<count where self[i].contains(rect) { return }
        if count < Self.maxRects {
            count += 1
            self[count - 1] = rect
            return
        }
        var best = 0, growth = Int.max
        for i in 0..<count {
            let grown = self[i].union(rect).area - self[i].area
            if grown < growth { (best, growth) = (i, grown) }
        }
        self[best] = self[best].union(rect)
    }

    /// Adds every rectangle of `other`.
    public mutating func formUnion(_ other: PixelRegion) {
        for i in 0..<other.count { add(other[i]) }
    }

    /// This region with every rectangle of `other` added after its own.
    public func union(_ other: PixelRegion) -> PixelRegion {
        var region = self
        region.formUnion(other)
        return region
    }

    public static func == (a: PixelRegion, b: PixelRegion) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a[i] != b[i] { return false }
        return true
    }
}
