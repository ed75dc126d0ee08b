extension String {
    /// This text with each character that `table` names replaced by its
    /// escape (HTML's `&lt;`, a Prometheus label's `\"`).
    package func escaped(_ table: [Character: String]) -> String {
        var escaped = ""
        for character in self {
            if let replacement = table[character] { escaped += replacement } else { escaped.append(character) }
        }
        return escaped
    }

    /// Escaped for HTML text.
    package var htmlEscaped: String { escaped(["<": "&lt;", ">": "&gt;", "&": "&amp;"]) }
}
