@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayHost
import FrameRelayTools

/// Producer write cost as a ratio to a plain memcpy of the same size,
/// measured side by side (alternating) in one run. Sources rotate through
/// eight frames (more than the last-level cache holds at 1080p), as fresh
/// captures arrive from memory, not from the cache.
func producerWriteCost(quick: Bool) throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    let sizes = [(1280, 720), (1920, 1080), (2732, 2048)]
    for (width, height) in sizes {
        for format in [PixelFormat.bgra, .nv12] {
            let sources = try (0..<8).map { n in
                let buffer = try PixelBuffer(width: width, height: height, format: format)
                _ = buffer.withUnsafeMutablePlane(0) { bytes, _ in bytes.initializeMemory(as: UInt8.self, repeating: UInt8(n + 1)) }
                return buffer
            }
            let capacity = sources[0].capacity
            let group = try AppGroup("group.bench.framerelay.write")
            let producer = try RingProducer(appGroup: group, slotCapacity: capacity)
            defer { producer.finish() }
            // memcpy into three rotating destinations, as the ring rotates three slots.
            let targets = (0..<3).map { _ in UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 4096) }
            defer { targets.forEach { $0.deallocate() } }
            for t in targets { t.initializeMemory(as: UInt8.self, repeating: 1, count: capacity) }
            var ring = LatencyHistogram(), copy = LatencyHistogram()
            let iterations = quick ? 60 : 400
            for i in 0..<(iterations + 20) {
                let t0 = MonotonicClock.now()
                try producer.publish(sources[i % 8], frameNumber: UInt64(i), captureTime: t0)
                let t1 = MonotonicClock.now()
                // Another source than the one just published, which the cache may still hold.
                sources[(i + 4) % 8].withUnsafeBytes { targets[i % 3].copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                let t2 = MonotonicClock.now()
                if i >= 20 {  // warm-up: page faults of first touches
                    ring.record(t1 - t0)
                    copy.record(t2 - t1)
                }
            }
            let ratio = Double(ring.percentile(50)) / Double(copy.percentile(50))
            let name = "ring.write.\(width)x\(height).\(format)"
            results.append(BenchmarkResult(name: name + ".ratio_to_memcpy", unit: "x", value: ratio,
                extra: String(format: "write p50 %.0f µs p99 %.0f µs, memcpy p50 %.0f µs", Double(ring.percentile(50)) / 1000, Double(ring.percentile(99)) / 1000, Double(copy.percentile(50)) / 1000)))
            results.append(BenchmarkResult(name: name + ".p50", unit: "us", value: Double(ring.percentile(50)) / 1000))
        }
    }
    return results
}

/// Publish → host awake, and producer peak RSS, between real processes.
func handoffBetweenProcesses(quick: Bool) throws -> [BenchmarkResult] {
    let group = "group.bench.framerelay.handoff"
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fr-bench-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let hostStats = dir.appendingPathComponent("host.json").path
    // --no-encode: the host only takes frames, so each publish finds it asleep on the futex.
    let host = try launch("frame-relay", ["--app-group", group, "--no-encode", "--exit-when-finished", "--report", hostStats, "--quiet"])
    let producer = try launch("broadcast-sim", ["--app-group", group, "--size", "320x240", "--fps", "200", "--duration", quick ? "2" : "8", "--quiet"])
    producer.waitUntilExit()
    host.waitUntilExit()
    let shares = try JSONDecoder().decode([ShareStats].self, from: Data(contentsOf: URL(fileURLWithPath: hostStats)))
    guard let share = shares.first, share.handoff.count > 0 else { throw UsageError("hand-off benchmark: the host took no frames") }
    return [
        BenchmarkResult(name: "ring.handoff.publish_to_host_awake.p50", unit: "us", value: share.handoff.p50, extra: "\(share.handoff.count) frames"),
        BenchmarkResult(name: "ring.handoff.publish_to_host_awake.p99", unit: "us", value: share.handoff.p99),
    ]
}

/// Peak RSS of a producer sending 2732×2048 NV12 at 60 frames/s (ring mapping included).
func producerPeakRSS(quick: Bool) throws -> [BenchmarkResult] {
    let group = "group.bench.framerelay.rss"
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fr-bench-rss-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let simStats = dir.appendingPathComponent("sim.json").path
    let host = try launch("frame-relay", ["--app-group", group, "--exit-when-finished", "--quiet"])
    let producer = try launch("broadcast-sim", ["--app-group", group, "--size", "2732x2048", "--format", "nv12", "--fps", "60", "--duration", quick ? "2" : "5", "--report", simStats, "--quiet"])
    producer.waitUntilExit()
    host.waitUntilExit()
    let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: simStats))) as! [String: Any]
    let rss = Double(stats["peakRSSBytes"] as! Int) / 1_000_000
    let frames = stats["written"] as! Int
    return [BenchmarkResult(name: "producer.peak_rss.2732x2048.nv12.60fps", unit: "MB", value: rss, extra: "\(frames) frames written, limit 50 MB")]
}
