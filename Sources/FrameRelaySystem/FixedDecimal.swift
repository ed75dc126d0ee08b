/// `value` with `digits` decimals, without Foundation's String(format:).
public func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    // Beyond what an Int holds once scaled: Swift's own description (1e+300), not a trap.
    guard abs(value) * scale < 9e18 else { return "\(value)" }
    let scaled = Int((abs(value) * scale).rounded())
    let whole = scaled / Int(scale), fraction = scaled % Int(scale)
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard digits > 0 else { return sign + "\(whole)" }
    let text = String(fraction)
    return sign + "\(whole)." + String(repeating: "0", count: digits - text.count) + text
}
