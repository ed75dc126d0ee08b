import FrameRelaySystem
import FrameRelaySubscriber
import FrameRelayTools

/// `frame-relay link-relay`: an impaired link for a browser watching
/// through Janus (the viewer page's `?relay=IP:VIEWER-PORT:JANUS-PORT`
/// points both ICE candidates at it), the same link `frame-relay subscribe
/// --link` gives its own viewers.
struct LinkRelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay link-relay", abstract: "an impaired UDP link between a browser and Janus (for the viewer page's ?relay=)")

    @Option("address", "IP", help: "The IPv4 address both sides listen on (one the browser and Janus reach).") var address = "127.0.0.1"
    @Option("link", "SPEC", help: "The link: loss=2%,delay=40ms,jitter=10ms,rate=3mbit (any part, and queue=300ms: the rate limit's queue; PART@20s changes a part from that time on, as in rate=5mbit,rate=1mbit@20s).", default: "perfect",
            transform: { try LinkConditions(parsing: $0) }) var link = LinkConditions()
    @Option("duration", "SECONDS", in: 0.1...1e6, help: "Relay for this long (default: until Ctrl-C).") var duration: Double?

    func run() throws -> Int32 {
        let relay = try LinkRelay(address: address, conditions: link)
        log("link-relay: viewer side \(address):\(relay.viewerPort), Janus side \(address):\(relay.janusPort) (\(link) link); Ctrl-C to stop   (page: ?relay=\(address):\(relay.viewerPort):\(relay.janusPort))")
        let end = duration.map { MonotonicClock.now() + UInt64($0 * 1e9) }
        try relay.run { Signals.stops.load(ordering: .relaxed) > 0 || end.map { MonotonicClock.now() >= $0 } ?? false }
        let dropped = relay.dropped
        func said(_ drops: LinkRelay.Drops) -> String {
            "\(drops.random) at random" + (link.rate > 0 ? ", \(drops.rate) for its rate" : "") + ", \(drops.buffer) with the relay's buffer full"
        }
        let held = relay.stillHeld
        log("link-relay: passed \(relay.passedDown) datagrams to the viewer and \(relay.passedUp) to Janus; dropped toward the viewer \(said(dropped.down)), "
            + "toward Janus \(said(dropped.up)); \(relay.strangers) from strangers, \(relay.unroutable) before the other side was known"
            + (held.down + held.up > 0 ? "; \(held.down) toward the viewer and \(held.up) toward Janus still held when it stopped" : ""))
        return 0
    }
}
