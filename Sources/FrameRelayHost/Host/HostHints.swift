import FrameRelaySystem
import FrameRelayRing
/// What the host says once when something looks wrong, from the shares'
/// statistics: the rings that exist when a producer never came (an App
/// Group spelt differently on one side), RTP that does not go out, and the
/// bottleneck of a share that drops frames.
struct HostHints {
    private var ringsNamed = false
    private var sendsFailing = Set<String>()
    private var bottlenecksNamed = Set<String>()

    /// Lines to log now (each said once); `start` is when the host started.
    mutating func lines(for snapshots: [ShareStats], since start: UInt64, quiet: Bool) -> [String] {
        var lines: [String] = []
        let elapsed = MonotonicClock.now() &- start
        // After 3 s without a producer, name the rings that are here.
        if !ringsNamed, !quiet, elapsed >= 3_000_000_000 {
            ringsNamed = true
            for share in snapshots where share.producerAttaches == 0 {
                if let group = try? AppGroup(share.appGroup) { lines.append(RingDirectory.hint(for: group)) }
            }
        }
        // A full socket buffer (EAGAIN, ENOBUFS) drops a burst; anything else means the destination is wrong.
        for share in snapshots {
            guard let code = share.transport?.lastSendError.map({ Errno($0) }), code != .wouldBlock, code != .noBufferSpace,
                sendsFailing.insert(share.appGroup).inserted
            else { continue }
            lines.append("\(share.appGroup): RTP packets are not going out: sendto failed with \(code); check --rtp")
        }
        // A share dropping more than 5 % once the producer has sent 3 s: say where the host's time goes.
        for share in snapshots where !quiet && !share.producerFinished && share.totalWritten >= 90 && share.totalDropped * 20 > share.totalWritten {
            guard bottlenecksNamed.insert(share.appGroup).inserted else { continue }
            let seconds = Double(elapsed) / 1e9
            var work = ""
            if let encoded = share.encoded {
                work = "; per frame: convert p50 \(fixed(encoded.convert.p50 / 1000, 2)) ms, encode p50 \(fixed(encoded.encode.p50 / 1000, 2)) ms (\(encoded.threads) thread\(encoded.threads == 1 ? "" : "s")) at \(encoded.width)x\(encoded.height)"
            }
            lines.append("\(share.appGroup): \(fixed(Double(share.totalDropped) * 100 / Double(share.totalWritten), 0)) % of frames dropped (the newest wins): "
                + "the host takes \(fixed(Double(share.taken) / seconds, 1)) frames/s of the producer's \(fixed(Double(share.totalWritten) / seconds, 1))\(work); "
                + "lower the producer's --fps or size, use --max-size, or give the host more CPU")
        }
        return lines
    }
}
