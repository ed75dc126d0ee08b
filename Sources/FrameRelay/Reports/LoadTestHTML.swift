import Glibc
import FrameRelaySystem

/// Renders a ``LoadTestReport`` as one HTML page with inline SVG charts:
/// the ramp (p99 and drops against shares), and for the largest step that
/// held and the first that did not, latency and frames/s over time per share,
/// the latency histogram over all shares and each share's latency percentiles.
public enum LoadTestHTML {
    public static func render(_ report: LoadTestReport) -> String {
        var body = """
        <h1>FrameRelay load test</h1>
        <p>\(report.size) \(report.format) at \(report.framesPerSecond) frames/s per share on \(report.cores) cores, \(report.hosts == 1 ? "one host process" : "shares dealt to \(report.hosts) host processes").
        Objective: drops &lt; \(fixed(report.objective.maxDropPercent, 1)) % and capture→encoded p99 &lt; \(fixed(report.objective.maxP99Milliseconds, 0)) ms on every share.
        <b>Largest number of shares that held it: \(report.maxSessionsHeld).</b></p>
        """
        body += table(report.steps)
        if report.steps.count > 1 { body += "<h2>Ramp</h2>" + rampChart(report) }
        let held = report.steps.filter(\.passed).max { $0.sessions < $1.sessions }
        let failed = report.steps.filter { !$0.passed }.min { $0.sessions < $1.sessions }
        for step in [held, failed].compactMap({ $0 }) {
            let seconds = step.timeline.map(\.seconds)
            body += "<h2>\(step.sessions) shares — \(step.passed ? "held" : "did not hold")</h2>"
            body += "<h3>Capture→encoded p99 over time, each second</h3>"
                + lineChart(seconds, step.timeline.map(\.p99Milliseconds), shares: step.sessions, yUnit: "ms", limit: report.objective.maxP99Milliseconds)
            body += "<h3>Frames per second over time</h3>" + lineChart(seconds, step.timeline.map { $0.fps.map(Optional.some) }, shares: step.sessions, yUnit: "frames/s")
            body += "<h3>Capture→encoded latency, all shares (frames per range)</h3>" + histogram(step.latency, limit: report.objective.maxP99Milliseconds)
            body += "<h3>Latency per share (p50 and p99)</h3>" + barChart(step.shares)
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>FrameRelay load test</title>
        <style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}
        td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}.fail{color:#b00}.pass{color:#070}
        svg{background:#fafafa;border:1px solid #ddd;margin:6px 0}svg text{font-size:11px}</style></head><body>\(body)</body></html>
        """
    }

    private static func table(_ steps: [LoadTestReport.Step]) -> String {
        var rows = "<table><tr><th>shares</th><th>result</th><th>frames in</th><th>frames out</th><th>drops %</th><th>fps (total)</th><th>p50 ms</th><th>p99 ms (worst share)</th><th>after warm-up: drops %, p99 ms</th><th>host CPU %</th><th>producers' CPU %</th><th>why it failed</th></tr>"
        for s in steps.sorted(by: { $0.sessions < $1.sessions }) {
            rows += "<tr><td>\(s.sessions)</td><td class=\"\(s.passed ? "pass" : "fail")\">\(s.passed ? "held" : "failed")</td><td>\(s.framesIn)</td><td>\(s.framesOut)</td>"
                + "<td>\(fixed(s.dropPercent, 2))</td><td>\(fixed(s.fps, 1))</td><td>\(fixed(s.p50Milliseconds, 1))</td><td>\(fixed(s.p99Milliseconds, 1))</td>"
                + "<td>\(s.steadyP99Milliseconds.map { "\(fixed(s.steadyDropPercent ?? 0, 2)), \(fixed($0, 1))" } ?? "-")</td><td>\(fixed(s.hostCPUPercent, 0))</td>"
                + "<td>\(fixed(s.producerCPUPercent, 0))</td><td class=\"fail\" style=\"text-align:left\">\(s.failures.map(\.htmlEscaped).joined(separator: "<br>"))</td></tr>"
        }
        rows += "</table>"
        // What WebRTC viewers through Janus got, per share of each step.
        let watched = steps.sorted(by: { $0.sessions < $1.sessions }).flatMap { step in step.shares.compactMap { share in share.viewers.map { (step.sessions, share.appGroup, $0) } } }
        guard !watched.isEmpty else { return rows }
        rows += "<h3>WebRTC viewers through Janus</h3><table><tr><th>shares</th><th>share</th><th>viewers</th><th>frames decoded (each)</th><th>lost %</th><th>first picture ms</th><th>glass to glass p50 ms</th><th>p99 ms</th></tr>"
        for (sessions, group, v) in watched {
            rows += "<tr><td>\(sessions)</td><td>\(group)</td><td>\(v.count)</td><td>\(v.framesDecoded.map(String.init).joined(separator: ", "))</td><td>\(fixed(v.lostPercent, 2))</td>"
                + "<td>\(fixed(v.firstPictureMilliseconds, 0))</td><td>\(fixed(v.glassToGlassP50Milliseconds, 1))</td><td>\(fixed(v.glassToGlassP99Milliseconds, 1))</td></tr>"
        }
        return rows + "</table>"
    }

    private static let palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

    /// Share `index`'s colour: the ten of the palette, then hues a golden angle apart, so no two shares share one.
    static func colour(_ index: Int) -> String {
        if index < palette.count { return palette[index] }
        let hue = (Double(index - palette.count) * 137.508 + 15).truncatingRemainder(dividingBy: 360)
        return "hsl(\(fixed(hue, 1)),70%,\(index % 2 == 0 ? 38 : 55)%)"
    }

    /// A chart's frame: its size, the plot area inside the margins, and the y axis from 0 to `maxY`.
    private struct Frame {
        let width = 720.0, height = 240.0, left = 56.0, right = 16.0, top = 24.0, bottom = 34.0
        let maxY: Double
        var plotWidth: Double { width - left - right }
        var plotHeight: Double { height - top - bottom }
        func y(_ value: Double) -> Double { top + plotHeight * (1 - value / maxY) }

        /// The opening tag, horizontal grid lines with their values, and the axis titles.
        func open(yUnit: String, xTitle: String) -> String {
            var svg = "<svg width=\"\(Int(width))\" height=\"\(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
            for fraction in [0.0, 0.5, 1.0] {
                let py = y(maxY * fraction)
                svg += "<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(fixed(py, 1))\" y2=\"\(fixed(py, 1))\" stroke=\"#ddd\"/>"
                svg += "<text x=\"\(left - 4)\" y=\"\(fixed(py + 4, 1))\" text-anchor=\"end\">\(fixed(maxY * fraction, maxY < 10 ? 1 : 0))</text>"
            }
            svg += "<text x=\"4\" y=\"12\">\(yUnit)</text>"
            svg += "<text x=\"\(fixed(left + plotWidth / 2, 1))\" y=\"\(fixed(height - 4, 1))\" text-anchor=\"middle\">\(xTitle)</text>"
            return svg
        }

        /// A dashed horizontal line at `value` (an objective), when it is on the chart.
        func limitLine(_ value: Double?) -> String {
            guard let value, value <= maxY else { return "" }
            return "<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(fixed(y(value), 1))\" y2=\"\(fixed(y(value), 1))\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/>"
        }
    }

    /// One line per share over `xs`; `series[i][share]` is share's value at `xs[i]` (nil: none, no point).
    private static func lineChart(_ xs: [Double], _ series: [[Double?]], shares: Int, yUnit: String, xUnit: String = "s", limit: Double? = nil) -> String {
        let maxX = max(1, xs.max() ?? 1)
        let frame = Frame(maxY: max(series.flatMap { $0.compactMap { $0 } }.max() ?? 1, limit ?? 0, 1) * 1.1)
        var svg = frame.open(yUnit: yUnit, xTitle: xUnit == "s" ? "time (s)" : xUnit) + frame.limitLine(limit)
        // Ticks at a round step (1, 2 or 5 times a power of ten), about five of them.
        let rough = maxX / 5, power = pow(10, (log10(rough)).rounded(.down))
        let step = [1.0, 2.0, 5.0, 10.0].map { $0 * power }.first { $0 >= rough } ?? rough
        for tick in stride(from: 0, through: maxX, by: step) {
            svg += "<text x=\"\(fixed(frame.left + tick / maxX * frame.plotWidth, 1))\" y=\"\(fixed(frame.top + frame.plotHeight + 13, 1))\" text-anchor=\"middle\">\(fixed(tick, step < 1 ? 1 : 0))</text>"
        }
        for share in 0..<shares {
            let points = zip(xs, series).compactMap { x, values -> String? in
                guard share < values.count, let value = values[share] else { return nil }
                return "\(fixed(frame.left + x / maxX * frame.plotWidth, 1)),\(fixed(frame.y(value), 1))"
            }
            svg += "<polyline fill=\"none\" stroke=\"\(colour(share))\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>"
        }
        return svg + "</svg>" + (shares > 1 ? legend((0..<shares).map { ("share \($0 + 1)", colour($0)) }) : "")
    }

    /// Frames per latency range, on a logarithmic time axis; the objective as a dashed line.
    private static func histogram(_ bins: [LatencyBin], limit: Double) -> String {
        guard let first = bins.first, let last = bins.last else { return "<p>No frames encoded.</p>" }
        let frame = Frame(maxY: Double(bins.map(\.count).max() ?? 1) * 1.1)
        // Milliseconds on a log axis from the first range's start to the last range's end.
        // The axis reaches the objective, so the chart shows how far the tail is from it.
        let low = log10(max(first.low / 1000, 0.001)), high = max(log10(last.high / 1000), log10(limit) + 0.05, low + 1)
        func x(_ ms: Double) -> Double { frame.left + (log10(max(ms, 0.001)) - low) / (high - low) * frame.plotWidth }
        var svg = frame.open(yUnit: "frames", xTitle: "capture→encoded (ms, logarithmic)")
        for bin in bins {
            let x0 = x(bin.low / 1000), x1 = x(bin.high / 1000), top = frame.y(Double(bin.count))
            svg += "<rect x=\"\(fixed(x0, 1))\" y=\"\(fixed(top, 1))\" width=\"\(fixed(max(1, x1 - x0 - 1), 1))\" height=\"\(fixed(frame.top + frame.plotHeight - top, 1))\" fill=\"#6baed6\"/>"
        }
        for decade in Int(low.rounded(.down))...Int(high.rounded(.up)) {
            for step in [1.0, 2.0, 5.0] {
                let ms = step * pow(10, Double(decade))
                guard (low...high).contains(log10(ms)) else { continue }
                svg += "<text x=\"\(fixed(x(ms), 1))\" y=\"\(fixed(frame.top + frame.plotHeight + 13, 1))\" text-anchor=\"middle\">\(ms < 1 ? fixed(ms, 1) : fixed(ms, 0))</text>"
            }
        }
        if (low...high).contains(log10(limit)) {
            svg += "<line x1=\"\(fixed(x(limit), 1))\" x2=\"\(fixed(x(limit), 1))\" y1=\"\(frame.top)\" y2=\"\(frame.top + frame.plotHeight)\" stroke=\"#b00\" stroke-dasharray=\"4 3\"/>"
        }
        return svg + "</svg>" + legend([("frames", "#6baed6"), ("objective p99", "#b00")])
    }

    private static func barChart(_ shares: [LoadTestReport.Share]) -> String {
        let frame = Frame(maxY: max(1, shares.map(\.p99Milliseconds).max() ?? 1) * 1.1)
        let slot = frame.plotWidth / Double(max(1, shares.count))
        var svg = frame.open(yUnit: "ms", xTitle: "share")
        for (index, share) in shares.enumerated() {
            let x = frame.left + Double(index) * slot
            for (offset, value, color) in [(0.1, share.p50Milliseconds, "#6baed6"), (0.5, share.p99Milliseconds, "#fd8d3c")] {
                let top = frame.y(value)
                svg += "<rect x=\"\(fixed(x + offset * slot, 1))\" y=\"\(fixed(top, 1))\" width=\"\(fixed(slot * 0.38, 1))\" height=\"\(fixed(frame.top + frame.plotHeight - top, 1))\" fill=\"\(color)\"/>"
            }
            svg += "<text x=\"\(fixed(x + 0.5 * slot, 1))\" y=\"\(fixed(frame.top + frame.plotHeight + 13, 1))\" text-anchor=\"middle\">\(index + 1)</text>"
        }
        return svg + "</svg>" + legend([("p50", "#6baed6"), ("p99", "#fd8d3c")])
    }

    private static func rampChart(_ report: LoadTestReport) -> String {
        let steps = report.steps.sorted { $0.sessions < $1.sessions }
        let xs = steps.map { Double($0.sessions) }
        let p99: [[Double?]] = steps.map { [$0.p99Milliseconds] }
        return "<p>Capture→encoded p99 (the worst share's) against the number of shares; the dashed line is the objective.</p>"
            + lineChart(xs, p99, shares: 1, yUnit: "ms", xUnit: "shares", limit: report.objective.maxP99Milliseconds)
    }

    /// Colour keys under a chart, one per entry.
    private static func legend(_ entries: [(String, String)]) -> String {
        "<p>" + entries.map { "<span style=\"color:\($0.1)\">■</span> \($0.0)" }.joined(separator: " &nbsp; ") + "</p>"
    }
}
