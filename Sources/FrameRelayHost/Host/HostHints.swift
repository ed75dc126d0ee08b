import FrameRelaySystem
import FrameRelayRing
/// What the host says once when something looks wrong, from the shares'
/// statistics: the rings that exist when a producer never came (an App
/// Group spelt differently on one side), RTP that does not go out (and,
/// after that, once it goes out again), and the bottleneck of a share that
/// drops frames.
struct HostHints {
    private var ringsNamed = false
    /// Shares whose RTP was said not to go out: their send errors and
    /// packets when the errors last grew, and when that was.
    private var sendsFailing: [String: (errors: UInt64, packets: UInt64, since: UInt64)] = [:]
    /// Each share's send errors when its failure was last said (a new failure is one past them).
    private var saidErrors: [String: UInt64] = [:]
    private var bottlenecksNamed = Set<String>()
    /// Each share's counters, and when they were published, once the host
    /// has taken a frame, taken anew at the first figures after each
    /// producer attaches: frames a producer wrote before the host came were
    /// replaced with no host to take them, and the time between producers
    /// is no producer's rate.
    private var firstTaken: [String: (attaches: Int, written: UInt64, dropped: UInt64, taken: UInt64, at: UInt64)] = [:]

    /// Lines to log now (each said once); `start` is when the host started.
    mutating func lines(for snapshots: [ShareStats], since start: UInt64, quiet: Bool) -> [String] {
        var lines: [String] = []
        let elapsed = MonotonicClock.now() &- start
        // After 3 s without a producer, name the rings that are here (quiet or not: an App Group spelt differently is a mistake to hear of).
        if !ringsNamed, elapsed >= 3_000_000_000 {
            ringsNamed = true
            for share in snapshots where share.producerAttaches == 0 {
                if let group = try? AppGroup(share.appGroup) { lines.append(RingDirectory.hint(for: group)) }
            }
        }
        // A full socket buffer (EAGAIN, ENOBUFS) drops a burst; anything else means the destination is wrong
        // (or its receiver not started yet: once a second has passed without a refusal, say the packets go out).
        let now = MonotonicClock.now()
        for share in snapshots {
            guard let transport = share.transport else { continue }
            if let failing = sendsFailing[share.appGroup] {
                if transport.sendErrors > failing.errors {
                    sendsFailing[share.appGroup] = (transport.sendErrors, transport.packets, now)
                } else if now &- failing.since >= 1_000_000_000, transport.packets > failing.packets {
                    sendsFailing[share.appGroup] = nil
                    saidErrors[share.appGroup] = transport.sendErrors
                    lines.append("\(share.appGroup): RTP packets go out now (\(transport.sendErrors) refused before)")
                }
                continue
            }
            guard let code = transport.lastSendError.map({ Errno($0) }), code != .wouldBlock, code != .noBufferSpace,
                transport.sendErrors > (saidErrors[share.appGroup] ?? 0)
            else { continue }
            sendsFailing[share.appGroup] = (transport.sendErrors, transport.packets, now)
            saidErrors[share.appGroup] = transport.sendErrors
            lines.append("\(share.appGroup): RTP packets are not going out: sendto failed with \(code)"
                + (code == .connectionRefused ? " (no receiver listening there yet? check --rtp)" : "; check --rtp"))
        }
        // A share dropping more than 5 % once the producer has sent 3 s to this host: say where the host's time goes.
        for share in snapshots where share.taken > 0 && firstTaken[share.appGroup]?.attaches != share.producerAttaches {
            firstTaken[share.appGroup] = (share.producerAttaches, share.totalWritten, share.totalDropped, share.taken, share.publishedAt)
        }
        for share in snapshots where !quiet && !share.producerFinished {
            // The counters come from shared memory, which anyone with the App Group may write: one that went back says nothing.
            guard let first = firstTaken[share.appGroup], !bottlenecksNamed.contains(share.appGroup), share.totalWritten >= first.written,
                share.totalDropped >= first.dropped, share.taken >= first.taken, share.publishedAt > first.at
            else { continue }
            let written = share.totalWritten - first.written, dropped = share.totalDropped - first.dropped
            guard written >= 90, Double(dropped) * 20 > Double(written) else { continue }
            bottlenecksNamed.insert(share.appGroup)
            // The counters and their time from the same publications (the time read here ran up to 250 ms ahead of them).
            let seconds = Double(share.publishedAt - first.at) / 1e9
            var work = ""
            if let encoded = share.encoded {
                work = "; per frame: convert p50 \(fixed(encoded.convert.p50 / 1000, 2)) ms, encode p50 \(fixed(encoded.encode.p50 / 1000, 2)) ms (\(encoded.threads) thread\(encoded.threads == 1 ? "" : "s")) at \(encoded.width)x\(encoded.height)"
            }
            lines.append("\(share.appGroup): \(fixed(Double(dropped) * 100 / Double(written), 0)) % of frames dropped (the newest wins): "
                + "the host takes \(fixed(Double(share.taken - first.taken) / seconds, 1)) frames/s of the producer's \(fixed(Double(written) / seconds, 1))\(work); "
                + "lower the producer's --fps or size, use --max-size, or give the host more CPU")
        }
        return lines
    }
}
