@preconcurrency import Glibc
import FrameRelaySystem

/// An impaired link for a WebRTC peer we do not run ourselves (a browser):
/// a UDP relay with a viewer side and a Janus side, each taking its peer
/// from the first datagram it gets (and nothing from anyone else after), passing everything between them through
/// an ``ImpairedPath`` each way (loss, delay and jitter both ways, the rate
/// toward the viewer). The viewer's page points the two ICE candidates at
/// the relay (Janus's in the offer to the viewer side, the viewer's in the
/// answer to the Janus side), so that nothing goes around it.
public final class LinkRelay {
    public let conditions: LinkConditions
    private let viewerSide: Socket
    private let janusSide: Socket
    /// The viewer side's and the Janus side's ports.
    public let viewerPort: Int
    public let janusPort: Int
    private var viewer: SocketAddress?
    private var janus: SocketAddress?
    /// The relay's own two sides: never taken as a peer (a datagram forged to seem one's would loop forever).
    private let ownSides: [SocketAddress]
    private let down: ImpairedPath
    private let up: ImpairedPath
    private let poll: EventPoll
    private let buffer: UnsafeMutableRawBufferPointer
    /// Datagrams delivered each way (sent on by the link), and those dropped because the other side was not known yet.
    public private(set) var passedDown: UInt64 = 0
    public private(set) var passedUp: UInt64 = 0
    public private(set) var unroutable: UInt64 = 0
    /// Datagrams the link still held, each way, when the relay stopped (a delay longer than what was left).
    public var stillHeld: (down: Int, up: Int) { (down.heldCount, up.heldCount) }
    /// Datagrams from an address other than the side's peer, dropped.
    public private(set) var strangers: UInt64 = 0

    /// Opens both sides on `address` (IPv4), each on a free port.
    public init(address: String, conditions: LinkConditions) throws(SubscriberError) {
        guard let local = SocketAddress(ipv4: address, port: 0) else { throw .system("invalid --address \"\(address)\": expected an IPv4 address") }
        self.conditions = conditions
        do {
            viewerSide = try Socket(family: AF_INET, type: SOCK_DGRAM, nonBlocking: true)
            janusSide = try Socket(family: AF_INET, type: SOCK_DGRAM, nonBlocking: true)
            viewerSide.setReceiveBuffer(4 << 20)
            janusSide.setReceiveBuffer(4 << 20)
            try viewerSide.bind(to: local)
            try janusSide.bind(to: local)
            viewerPort = try viewerSide.localAddress().port
            janusPort = try janusSide.localAddress().port
            ownSides = [try viewerSide.localAddress(), try janusSide.localAddress()]
            poll = try EventPoll()
            try poll.add(viewerSide.rawValue, tag: 0)
            try poll.add(janusSide.rawValue, tag: 1)
        } catch {
            throw .system("the link relay's sockets: \(error)")
        }
        // Room for a minute of delay at 4 Mbit/s toward the viewer, and a minute of feedback back.
        down = ImpairedPath(conditions, limitsRate: true, capacity: 32 << 20)
        up = ImpairedPath(conditions, limitsRate: false, capacity: 4 << 20)
        // Any UDP datagram whole (ICE, DTLS and SRTP ones can pass 1,500 bytes).
        buffer = .allocate(byteCount: 65_536, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Relays until `shouldStop` says so (checked at least every 50 ms).
    public func run(shouldStop: () -> Bool) throws(SubscriberError) {
        while !shouldStop() {
            let now = MonotonicClock.now()
            let next = [down.nextDue, up.nextDue].compactMap { $0 }.min() ?? now + 50_000_000
            let wait = next <= now ? 0 : Int32(min(50, (next - now + 999_999) / 1_000_000))
            do {
                try poll.wait(milliseconds: wait) { tag in drain(tag == 0) }
            } catch {
                throw .system("the link relay: \(error)")
            }
            let after = MonotonicClock.now()
            down.release(now: after) { datagram, address in
                if (try? viewerSide.send(UnsafeRawBufferPointer(datagram), to: address)) != nil { passedDown += 1 }
            }
            up.release(now: after) { datagram, address in
                if (try? janusSide.send(UnsafeRawBufferPointer(datagram), to: address)) != nil { passedUp += 1 }
            }
        }
    }

    /// Takes what waits on one side and hands it to the path toward the other.
    private func drain(_ fromViewer: Bool) {
        var source = SocketAddress()
        for _ in 0..<64 {
            let received = fromViewer ? try? viewerSide.receive(into: buffer, from: &source) : try? janusSide.receive(into: buffer, from: &source)
            // nil: nothing waits; an empty datagram (0 bytes) is relayed like any other.
            guard let count = received ?? nil else { return }
            let now = MonotonicClock.now(), datagram = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            // Each side's peer is the first address heard there (never one of the relay's own sides); anyone else is dropped, never followed.
            if ownSides.contains(where: { $0.isSame(as: source) }) {
                strangers += 1
                continue
            }
            if fromViewer {
                if viewer == nil { viewer = source }
                guard viewer?.isSame(as: source) == true else { strangers += 1; continue }
                guard let janus else { unroutable += 1; continue }
                _ = up.admit(datagram, address: janus, now: now)
            } else {
                if janus == nil { janus = source }
                guard janus?.isSame(as: source) == true else { strangers += 1; continue }
                guard let viewer else { unroutable += 1; continue }
                _ = down.admit(datagram, address: viewer, now: now)
            }
        }
    }

    /// What the link dropped in one direction, by cause: at random, for its
    /// rate (the rate's queue was full; toward the viewer only), and with the
    /// relay's buffer full (a delay longer than it holds).
    public struct Drops: Equatable, Sendable {
        public var random: UInt64
        public var rate: UInt64
        public var buffer: UInt64
    }

    /// The link's drops toward the viewer and toward Janus.
    public var dropped: (down: Drops, up: Drops) {
        (Drops(random: down.lost, rate: down.overflowed, buffer: down.bufferFull), Drops(random: up.lost, rate: up.overflowed, buffer: up.bufferFull))
    }
}
