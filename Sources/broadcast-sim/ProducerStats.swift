import FoundationEssentials
import FrameRelaySystem

/// Counters written by --report.
struct ProducerStats: Codable {
    var frames: UInt64
    var written: UInt64
    var dropped: UInt64
    /// Frames a host had taken when the broadcast finished (the ring's
    /// count, read before the finish: the host may take the last frame after it).
    var takenByHost: UInt64
    var throttled: UInt64
    var maxSampleMicros: Double
    var peakRSSBytes: Int
    var stopReason: String
    var slotCapacity: Int
    /// Rings made anew after another process damaged, shrank or unlinked the ring.
    var ringsRecreated: Int
    /// This process's CPU time (user and system, every thread) per frame
    /// after the first, in µs: what capturing and publishing a frame costs,
    /// without the start (a screen cast's D-Bus and PipeWire set-up).
    var cpuPerFrameMicros: Double
    /// A screen cast's new pictures from PipeWire handing them over to
    /// their publishing in the ring (the producer's own part of capture →
    /// published; the compositor's, from its pts, comes before), in µs.
    var deliveredToPublished: LatencySummary?
}

/// VmHWM: the most resident memory this process has had, ring mapping included.
func peakRSSBytes() -> Int {
    guard let data = FileManager.default.contents(atPath: "/proc/self/status") else { return 0 }
    let status = String(decoding: data, as: UTF8.self)
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kb * 1024
    }
    return 0
}
