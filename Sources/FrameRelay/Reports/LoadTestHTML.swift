/// Renders a ``LoadTestReport`` as one HTML page with inline SVG charts:
/// the ramp (p99 and drops against shares), and for the largest step that
/// held and the first that did not, latency and frames/s over time per share
/// and each share's latency percentiles.
public enum LoadTestHTML {
    public static func render(_ report: LoadTestReport) -> String {
        var body = """
        <h1>FrameRelay load test</h1>
        <p>\(report.size) \(report.format) at \(report.framesPerSecond) frames/s per share on \(report.cores) cores.
        Objective: drops &lt; \(fixed(report.objective.maxDropPercent, 1)) % and capture→encoded p99 &lt; \(fixed(report.objective.maxP99Milliseconds, 0)) ms on every share.
        <b>Largest number of shares that held it: \(report.maxSessionsHeld).</b></p>
        """
        body += table(report.steps)
        if report.steps.count > 1 { body += "<h2>Ramp</h2>" + rampChart(report) }
        let held = report.steps.filter(\.passed).max { $0.sessions < $1.sessions }
        let failed = report.steps.filter { !$0.passed }.min { $0.sessions < $1.sessions }
        for step in [held, failed].compactMap({ $0 }) {
            body += "<h2>\(step.sessions) shares — \(step.passed ? "held" : "did not hold")</h2>"
            body += "<h3>Latency p99 over time, per second (ms)</h3>" + lineChart(step.timeline.map(\.seconds), step.timeline.map(\.p99Milliseconds), shares: step.sessions)
            body += "<h3>Frames per second over time</h3>" + lineChart(step.timeline.map(\.seconds), step.timeline.map(\.fps), shares: step.sessions)
            body += "<h3>Latency per share (p50 and p99, ms)</h3>" + barChart(step.shares)
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>FrameRelay load test</title>
        <style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}
        td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}.fail{color:#b00}.pass{color:#070}
        svg{background:#fafafa;border:1px solid #ddd;margin:6px 0}</style></head><body>\(body)</body></html>
        """
    }

    private static func table(_ steps: [LoadTestReport.Step]) -> String {
        var rows = "<table><tr><th>shares</th><th>result</th><th>frames in</th><th>frames out</th><th>drops %</th><th>fps (total)</th><th>p50 ms</th><th>p99 ms</th><th>host CPU %</th></tr>"
        for s in steps.sorted(by: { $0.sessions < $1.sessions }) {
            rows += "<tr><td>\(s.sessions)</td><td class=\"\(s.passed ? "pass" : "fail")\">\(s.passed ? "held" : "failed")</td><td>\(s.framesIn)</td><td>\(s.framesOut)</td>"
                + "<td>\(fixed(s.dropPercent, 2))</td><td>\(fixed(s.fps, 1))</td><td>\(fixed(s.p50Milliseconds, 1))</td><td>\(fixed(s.p99Milliseconds, 1))</td><td>\(fixed(s.hostCPUPercent, 0))</td></tr>"
        }
        return rows + "</table>"
    }

    private static let palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

    private static func lineChart(_ xs: [Double], _ series: [[Double]], shares: Int, xUnit: String = "s") -> String {
        let width = 720.0, height = 220.0, pad = 40.0
        let maxX = max(1, xs.max() ?? 1)
        let maxY = max(1, series.flatMap { $0 }.max() ?? 1) * 1.1
        var svg = "<svg width=\"\(Int(width))\" height=\"\(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<text x=\"4\" y=\"14\" font-size=\"11\">\(fixed(maxY, 1))</text><text x=\"4\" y=\"\(Int(height - pad))\" font-size=\"11\">0</text>"
        svg += "<text x=\"\(Int(width - 60))\" y=\"\(Int(height - 8))\" font-size=\"11\">\(fixed(maxX, 0)) \(xUnit)</text>"
        for share in 0..<shares {
            let points = zip(xs, series).compactMap { x, values -> String? in
                guard share < values.count else { return nil }
                let px = pad + x / maxX * (width - 2 * pad), py = height - pad - values[share] / maxY * (height - 2 * pad)
                return "\(fixed(px, 1)),\(fixed(py, 1))"
            }
            svg += "<polyline fill=\"none\" stroke=\"\(palette[share % palette.count])\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>"
        }
        return svg + "</svg>"
    }

    private static func barChart(_ shares: [LoadTestReport.Share]) -> String {
        let width = 720.0, height = 220.0, pad = 40.0
        let maxY = max(1, shares.map(\.p99Milliseconds).max() ?? 1) * 1.1
        let slot = (width - 2 * pad) / Double(max(1, shares.count))
        var svg = "<svg width=\"\(Int(width))\" height=\"\(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<text x=\"4\" y=\"14\" font-size=\"11\">\(fixed(maxY, 1)) ms</text>"
        for (index, share) in shares.enumerated() {
            let x = pad + Double(index) * slot
            for (offset, value, color) in [(0.1, share.p50Milliseconds, "#6baed6"), (0.5, share.p99Milliseconds, "#fd8d3c")] {
                let h = value / maxY * (height - 2 * pad)
                svg += "<rect x=\"\(fixed(x + offset * slot, 1))\" y=\"\(fixed(height - pad - h, 1))\" width=\"\(fixed(slot * 0.38, 1))\" height=\"\(fixed(h, 1))\" fill=\"\(color)\"/>"
            }
            svg += "<text x=\"\(fixed(x + 0.1 * slot, 1))\" y=\"\(Int(height - pad + 14))\" font-size=\"10\">\(index + 1)</text>"
        }
        return svg + "</svg>"
    }

    private static func rampChart(_ report: LoadTestReport) -> String {
        let steps = report.steps.sorted { $0.sessions < $1.sessions }
        let xs = steps.map { Double($0.sessions) }
        let p99 = steps.map { [$0.p99Milliseconds] }
        return "<p>capture→encoded p99 (ms) against shares; objective \(fixed(report.objective.maxP99Milliseconds, 0)) ms</p>" + lineChart(xs, p99, shares: 1, xUnit: "shares")
    }
}
