/// How far apart two names are, for guessing what a user meant: the
/// insertions, deletions, substitutions and swaps of two neighbours that
/// turn one into the other (the optimal string alignment distance, over
/// UTF-8 bytes: `fsp` is one from `fps`).
public enum EditDistance {
    public static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        // d[i][j]: the distance between a's first i bytes and b's first j.
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    /// The one of `candidates` nearest `name`, when it is at most `within`
    /// edits away (by default a slip of the keys: one edit in three letters).
    public static func nearest(to name: String, among candidates: [String], within: Int? = nil) -> String? {
        guard let best = candidates.min(by: { between($0, name) < between($1, name) }) else { return nil }
        return between(best, name) <= (within ?? max(1, name.count / 3)) ? best : nil
    }
}
