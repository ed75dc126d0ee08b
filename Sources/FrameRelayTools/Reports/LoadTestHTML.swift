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
        <p>\(report.size) \(report.format) at \(report.framesPerSecond) frames/s per share\(report.content.map { ", content \($0)" } ?? "")\(report.bitrateKbps.map { ", \($0) kbit/s" } ?? "")\(report.layers.map { ", \($0) layer\($0 == 1 ? "" : "s")" } ?? "") on \(report.cores) cores, \(report.hosts == 1 ? "one host process" : "shares dealt to \(report.hosts) host processes").
        Objective: drops &lt; \(fixed(report.objective.maxDropPercent, 1)) % and capture→encoded p99 &lt; \(fixed(report.objective.maxP99Milliseconds, 0)) ms on every share\(
            report.steps.contains { $0.viewersPerShare != nil } ? "; every group of WebRTC viewers loses &lt; \(fixed(report.objective.maxViewerLossPercent, 1)) % after NACK, capture→viewer p99 &lt; \(fixed(report.objective.maxViewerP99Milliseconds, 0)) ms" : "").
        <b>\(report.maxViewersHeld.map { "Largest number of viewers per share that held it: \($0)." } ?? "Largest number of shares that held it: \(report.maxSessionsHeld).")</b></p>
        """
        body += table(report.steps)
        if report.steps.count > 1 { body += "<h2>Ramp</h2>" + rampChart(report) }
        let held = report.steps.filter(\.passed).max { size($0) < size($1) }
        let failed = report.steps.filter { !$0.passed }.min { size($0) < size($1) }
        for step in [held, failed].compactMap({ $0 }) {
            let seconds = step.timeline.map(\.seconds)
            body += "<h2>\(name(step)) — \(step.interrupted ? "interrupted, not judged" : step.passed ? "held" : "did not hold")</h2>"
            // The warm-up (until the last share's ends) is drawn apart: the objective does not judge it.
            let warmUp = report.objective.warmUpSeconds > 0 && step.steadyP99Milliseconds != nil
                ? (step.shares.map(\.startedAfter).max() ?? 0) + report.objective.warmUpSeconds : nil
            body += "<h3>Capture→encoded p99 over time, each second</h3>"
                + lineChart(seconds, step.timeline.map(\.p99Milliseconds), shares: step.sessions, yUnit: "ms", limit: report.objective.maxP99Milliseconds, warmUp: warmUp)
            body += "<h3>Frames per second over time</h3>" + lineChart(seconds, step.timeline.map { $0.fps.map(Optional.some) }, shares: step.sessions, yUnit: "frames/s")
            body += "<h3>Capture→encoded latency, all shares (frames per range)</h3>" + histogram(step.latency, limit: report.objective.maxP99Milliseconds)
            body += "<h3>Latency per share: p50 and p99 as judged (after the warm-up), and the whole step's p99 in grey (not judged)</h3>" + barChart(step.shares)
            body += groupCharts(step)
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>FrameRelay load test</title>
        <style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}
        td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}.fail{color:#b00}.pass{color:#070}
        .judged{font-weight:bold}.whole{color:#888}
        svg{background:#fafafa;border:1px solid #ddd;margin:6px 0}svg text{font-size:11px}</style></head><body>\(body)</body></html>
        """
    }

    /// How big a step is: its shares, then its viewers per share.
    private static func size(_ step: LoadTestReport.Step) -> (Int, Int) { (step.sessions, step.viewersPerShare ?? 0) }

    private static func name(_ step: LoadTestReport.Step) -> String {
        counted(step.sessions, "share") + (step.viewersPerShare.map { " × " + counted($0, "viewer") } ?? "")
    }

    private static func table(_ steps: [LoadTestReport.Step]) -> String {
        // What the objective judges (after the warm-up, where the step had one) comes first; the
        // whole step, warm-up included, is apart and greyed.
        var rows = "<table><tr><th rowspan=\"2\">shares</th><th rowspan=\"2\">viewers each</th><th rowspan=\"2\">result</th><th colspan=\"2\">judged</th>"
            + "<th colspan=\"3\" class=\"whole\">whole step, warm-up included</th><th rowspan=\"2\">frames in</th><th rowspan=\"2\">frames out</th><th rowspan=\"2\">fps (total)</th>"
            + "<th rowspan=\"2\">host CPU %</th><th rowspan=\"2\">producers' CPU %</th><th rowspan=\"2\">why it failed</th></tr>"
            + "<tr><th>drops %</th><th>p99 ms (worst share)</th><th class=\"whole\">drops %</th><th class=\"whole\">p50 ms</th><th class=\"whole\">p99 ms</th></tr>"
        for s in steps.sorted(by: { size($0) < size($1) }) {
            let judgedDrops = s.steadyP99Milliseconds == nil ? s.dropPercent : s.steadyDropPercent ?? 0
            rows += "<tr><td>\(s.sessions)</td><td>\(s.viewersPerShare.map(String.init) ?? "-")</td><td class=\"\(s.passed ? "pass" : "fail")\">\(s.passed ? "held" : "failed")</td>"
                + "<td class=\"judged\">\(fixed(judgedDrops, 2))</td><td class=\"judged\">\(fixed(s.steadyP99Milliseconds ?? s.p99Milliseconds, 1))</td>"
                + "<td class=\"whole\">\(fixed(s.dropPercent, 2))</td><td class=\"whole\">\(fixed(s.p50Milliseconds, 1))</td><td class=\"whole\">\(fixed(s.p99Milliseconds, 1))</td>"
                + "<td>\(s.framesIn)</td><td>\(s.framesOut)</td><td>\(fixed(s.fps, 1))</td><td>\(fixed(s.hostCPUPercent, 0))</td>"
                + "<td>\(fixed(s.producerCPUPercent, 0))</td><td class=\"fail\" style=\"text-align:left\">\(s.failures.map(\.htmlEscaped).joined(separator: "<br>"))</td></tr>"
        }
        rows += "</table>"
        let watchedSteps = steps.filter { $0.viewersPerShare != nil }.sorted { size($0) < size($1) }
        guard !watchedSteps.isEmpty else { return rows }
        // Where the CPU went while the viewers watched, and what bounded each step.
        rows += "<h3>CPU while the viewers watched (% of one core)</h3><table><tr><th>step</th><th>host</th><th>Janus</th><th>viewers</th><th>producers</th><th style=\"text-align:left\">bounded by</th></tr>"
        for s in watchedSteps {
            rows += "<tr><td>\(name(s))</td><td>\(fixed(s.hostCPUPercent, 0))</td><td>\(s.janusCPUPercent.map { fixed($0, 0) } ?? "not here")</td>"
                + "<td>\(s.viewersCPUPercent.map { fixed($0, 0) } ?? "-")</td><td>\(fixed(s.producerCPUPercent, 0))</td><td style=\"text-align:left\">\((s.bound ?? "").htmlEscaped)</td></tr>"
        }
        rows += "</table>"
        // What each group of WebRTC viewers through Janus got, per share of each step.
        rows += "<h3>WebRTC viewers through Janus, per link</h3><table><tr><th>step</th><th>share</th><th>viewers</th><th>link</th><th>watching</th><th>lost %</th>"
            + "<th>NACK recoveries</th><th>PLIs</th><th>keyframe waits</th><th>freezes / min</th><th>first picture ms (slowest)</th><th>p50 ms</th><th>p99 ms</th><th>pictures checked (wrong)</th>"
            + "<th>frames/s a viewer</th><th>kbit/s a viewer</th><th>time at each layer</th></tr>"
        for s in watchedSteps {
            for share in s.shares {
                guard let viewers = share.viewers else { continue }
                for group in viewers.groups {
                    rows += "<tr><td>\(name(s))</td><td>\(share.appGroup.htmlEscaped)</td><td>\(viewers.kind)</td><td>\(group.link.htmlEscaped)</td>"
                        + "<td class=\"\(group.watching < group.viewers ? "fail" : "pass")\">\(group.watching) of \(group.viewers)</td><td>\(fixed(group.lossPercent, 2))</td>"
                        + "<td>\(group.recoveredPackets)</td><td>\(group.plisSent)</td><td>\(group.keyframeWaits)</td><td>\(group.freezesText)</td>"
                        + "<td>\(group.firstFrameMaxMs.map { fixed($0, 0) } ?? "-")</td><td>\(group.p50Ms.map { fixed($0, 1) } ?? "-")</td><td>\(group.p99Ms.map { fixed($0, 1) } ?? "-")</td>"
                        + "<td>\(group.picturesChecked) (\(group.picturesWrong))</td><td>\(fixed(group.framesPerSecond, 1))</td><td>\(fixed(group.kbitPerSecond, 0))</td>"
                        + "<td style=\"text-align:left\">\(group.layersText.isEmpty ? "one layer" : group.layersText.htmlEscaped)</td></tr>"
                }
            }
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

    /// One line per share over `xs`; `series[i][share]` is share's value at
    /// `xs[i]` (nil: none, no point); the objective as a dashed line, and the
    /// first `warmUp` seconds shaded as not judged. `lines` names and colours
    /// the lines instead of "share N", and marks each point with its value.
    private static func lineChart(_ xs: [Double], _ series: [[Double?]], shares: Int, yUnit: String, xUnit: String = "s", limit: Double? = nil, warmUp: Double? = nil,
                                  lines: [(name: String, colour: String)]? = nil) -> String {
        let maxX = max(1, xs.max() ?? 1)
        let frame = Frame(maxY: max(series.flatMap { $0.compactMap { $0 } }.max() ?? 1, limit ?? 0, 1) * 1.1)
        var svg = frame.open(yUnit: yUnit, xTitle: xUnit == "s" ? "time (s)" : xUnit)
        if let warmUp {
            let width = min(warmUp, maxX) / maxX * frame.plotWidth
            svg += "<rect class=\"warm-up\" x=\"\(fixed(frame.left, 1))\" y=\"\(fixed(frame.top, 1))\" width=\"\(fixed(width, 1))\" height=\"\(fixed(frame.plotHeight, 1))\" fill=\"#e8e8e8\"/>"
                + "<text x=\"\(fixed(frame.left + 4, 1))\" y=\"\(fixed(frame.top + 12, 1))\" fill=\"#777\">warm-up: not judged</text>"
        }
        svg += frame.limitLine(limit)
        // Ticks at a round step (1, 2 or 5 times a power of ten), about five of them.
        let rough = maxX / 5, power = pow(10, (log10(rough)).rounded(.down))
        let step = [1.0, 2.0, 5.0, 10.0].map { $0 * power }.first { $0 >= rough } ?? rough
        for tick in stride(from: 0, through: maxX, by: step) {
            svg += "<text x=\"\(fixed(frame.left + tick / maxX * frame.plotWidth, 1))\" y=\"\(fixed(frame.top + frame.plotHeight + 13, 1))\" text-anchor=\"middle\">\(fixed(tick, step < 1 ? 1 : 0))</text>"
        }
        for share in 0..<shares {
            let stroke = lines.map { $0[share].colour } ?? colour(share)
            let points = zip(xs, series).compactMap { x, values -> (x: Double, value: Double)? in
                guard share < values.count, let value = values[share] else { return nil }
                return (x, value)
            }
            let at = points.map { "\(fixed(frame.left + $0.x / maxX * frame.plotWidth, 1)),\(fixed(frame.y($0.value), 1))" }
            svg += "<polyline fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"1.5\" points=\"\(at.joined(separator: " "))\"/>"
            guard let lines else { continue }
            for (point, place) in zip(points, at) {
                let xy = place.split(separator: ",")
                svg += "<circle cx=\"\(xy[0])\" cy=\"\(xy[1])\" r=\"3\" fill=\"\(stroke)\"><title>\(xUnit) \(fixed(point.x, 0)): \(lines[share].name) \(fixed(point.value, 1)) \(yUnit)</title></circle>"
            }
        }
        if let lines { return svg + "</svg>" + legend(lines.map { ($0.name, $0.colour) }) }
        return svg + "</svg>" + (shares > 1 ? legend((0..<shares).map { ("share \($0 + 1)", colour($0)) }) : "")
    }

    /// Each viewer group's frames/s, loss after repair and layer over time (from when its viewers began to watch), one line a group.
    private static func groupCharts(_ step: LoadTestReport.Step) -> String {
        let groups = step.shares.enumerated().flatMap { index, share in
            (share.viewers?.groups ?? []).map { (name: "share \(index + 1) \($0.link)", group: $0) }
        }.filter { !$0.group.framesEachSecond.isEmpty || !$0.group.lostEachSecond.isEmpty }
        guard !groups.isEmpty else { return "" }
        let lines = groups.indices.map { (name: groups[$0].name, colour: colour($0)) }
        let seconds = groups.map { max($0.group.framesEachSecond.count, $0.group.lostEachSecond.count) }.max()!
        func series(_ values: (LoadTestReport.ViewerGroup) -> [Double]) -> [[Double?]] {
            (0..<seconds).map { second in groups.map { entry in
                let each = values(entry.group)
                return second < each.count ? each[second] : nil
            } }
        }
        let xs = (0..<seconds).map { Double($0) + 1 }
        var html = "<h3>Each viewer group: decodable frames a second per viewer, over time</h3>"
            + lineChart(xs, series(\.framesEachSecond), shares: groups.count, yUnit: "frames/s", lines: lines)
        if groups.contains(where: { $0.group.lostEachSecond.contains { $0 > 0 } }) {
            html += "<h3>Each viewer group: packets lost after repair a second per viewer, in the second each went missing</h3>"
                + lineChart(xs, series(\.lostEachSecond), shares: groups.count, yUnit: "packets/s", lines: lines)
        }
        if groups.contains(where: { !$0.group.layerEachSecond.isEmpty }) {
            html += "<h3>Each viewer group: the layer watched (substream + temporal / 2: 0 is the smallest at half its frame rate, 0.5 the smallest whole, 1 and 1.5 the next, 2 and 2.5 a third), mean over its viewers</h3>"
                + lineChart(xs, series(\.layerEachSecond), shares: groups.count, yUnit: "layer", lines: lines)
        }
        return html
    }

    /// The ramp's two lines: the p99 the objective judges, and the whole step's (grey).
    private static let judgedAndWhole = [(name: "p99 judged (after the warm-up)", colour: "#d62728"), (name: "p99 of the whole step, warm-up included (not judged)", colour: "#aaa")]

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

    /// Each share's p50 and p99 as judged (after the warm-up, where there
    /// was one) and its whole step's p99 in grey, each bar titled with its value.
    private static func barChart(_ shares: [LoadTestReport.Share]) -> String {
        let frame = Frame(maxY: max(1, shares.map { max($0.p99Milliseconds, $0.steady?.p99Milliseconds ?? 0) }.max() ?? 1) * 1.1)
        let slot = frame.plotWidth / Double(max(1, shares.count))
        var svg = frame.open(yUnit: "ms", xTitle: "share")
        for (index, share) in shares.enumerated() {
            let x = frame.left + Double(index) * slot
            let judged = share.steady.map { ($0.p50Milliseconds, $0.p99Milliseconds) } ?? (share.p50Milliseconds, share.p99Milliseconds)
            for (offset, value, color, what) in [(0.06, judged.0, "#6baed6", "p50 judged"), (0.36, judged.1, "#fd8d3c", "p99 judged"),
                                                 (0.66, share.p99Milliseconds, "#ccc", "p99 of the whole step (not judged)")] {
                let top = frame.y(value)
                svg += "<rect x=\"\(fixed(x + offset * slot, 1))\" y=\"\(fixed(top, 1))\" width=\"\(fixed(slot * 0.28, 1))\" height=\"\(fixed(frame.top + frame.plotHeight - top, 1))\" fill=\"\(color)\">"
                    + "<title>share \(index + 1): \(what) \(fixed(value, 1)) ms</title></rect>"
            }
            svg += "<text x=\"\(fixed(x + 0.5 * slot, 1))\" y=\"\(fixed(frame.top + frame.plotHeight + 13, 1))\" text-anchor=\"middle\">\(index + 1)</text>"
        }
        return svg + "</svg>" + legend([("p50 judged", "#6baed6"), ("p99 judged", "#fd8d3c"), ("p99 of the whole step, warm-up included (not judged)", "#ccc")])
    }

    private static func rampChart(_ report: LoadTestReport) -> String {
        if report.maxViewersHeld != nil {
            // A ramp of viewers: their worst group's p99 against viewers per share.
            let steps = report.steps.sorted { size($0) < size($1) }
            let xs = steps.map { Double($0.viewersPerShare ?? 0) }
            let p99: [[Double?]] = steps.map { step in [step.shares.flatMap { $0.viewers?.groups ?? [] }.compactMap(\.p99Ms).max()] }
            return "<p>Capture→viewer p99 (the worst group's) against viewers per share; the dashed line is the objective.</p>"
                + lineChart(xs, p99, shares: 1, yUnit: "ms", xUnit: "viewers", limit: report.objective.maxViewerP99Milliseconds)
        }
        let steps = report.steps.sorted { $0.sessions < $1.sessions }
        let xs = steps.map { Double($0.sessions) }
        // What the objective judged (after the warm-up), and in grey the whole step's, which it did not.
        let p99: [[Double?]] = steps.map { [$0.steadyP99Milliseconds ?? $0.p99Milliseconds, $0.p99Milliseconds] }
        return "<p>Capture→encoded p99 (the worst share's) against the number of shares: the p99 the objective judges, after the warm-up, and in grey the whole step's; the dashed line is the objective.</p>"
            + lineChart(xs, p99, shares: 2, yUnit: "ms", xUnit: "shares", limit: report.objective.maxP99Milliseconds, lines: judgedAndWhole)
    }

    /// Colour keys under a chart, one per entry.
    private static func legend(_ entries: [(String, String)]) -> String {
        "<p>" + entries.map { "<span style=\"color:\($0.1)\">■</span> \($0.0)" }.joined(separator: " &nbsp; ") + "</p>"
    }
}
