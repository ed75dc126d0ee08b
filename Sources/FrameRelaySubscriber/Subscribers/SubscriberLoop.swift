@preconcurrency import Glibc
import FrameRelaySystem
import Synchronization

/// Many subscribers on one thread: an epoll over their sockets, each
/// datagram handed to its subscriber, each subscriber's timers run when
/// due. Subscribers are handed over (``add(_:)``) from the thread that
/// joins them; from then on only the loop's thread touches them, until
/// ``stop()`` has returned.
final class SubscriberLoop: @unchecked Sendable {
    // @unchecked Sendable: `subscribers`, `due` and `buffer` are touched only
    // by the loop's thread while it runs, and by the owner after stop();
    // new subscribers cross over through the locked `incoming` and the eventfd.
    private let poll: EventPoll
    private let wake: EventSignal
    private let incoming = Locked<[Subscriber]>([])
    private(set) var subscribers: [Subscriber] = []
    private var due: [UInt64] = []
    private let stopping = Atomic<Bool>(false)
    private let running = Locked(false)
    private let buffer: UnsafeMutableRawBufferPointer
    /// Viewers that have stopped (Janus hung up, went silent), counted by the loop's thread.
    let ended = Atomic<Int>(0)
    /// Why the loop stopped on its own (epoll failed), if it did.
    let failure = Locked<String?>(nil)
    private static let wakeTag = UInt64.max
    /// Datagrams read from one socket before the others get their turn.
    private static let burst = 64

    init() throws(SubscriberError) {
        do {
            poll = try EventPoll()
            wake = try EventSignal()
            try poll.add(wake.descriptor.rawValue, tag: Self.wakeTag)
        } catch {
            throw .system("\(error)")
        }
        buffer = .allocate(byteCount: 2048, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Starts the loop's thread.
    func start() throws(SubscriberError) {
        running.withLock { $0 = true }
        guard startDetachedThread({ [self] in
            run()
            running.withLock { $0 = false }
        }) else {
            running.withLock { $0 = false }
            throw .system("pthread_create: no thread for the subscribers' loop")
        }
    }

    /// Subscribers handed over so far (the joining thread's count).
    private(set) var count = 0

    /// Hands a joined subscriber to the loop.
    func add(_ subscriber: Subscriber) {
        count += 1
        incoming.withLock { $0.append(subscriber) }
        wake.signal()
    }

    /// Ends the loop and waits for its thread; the subscribers are the caller's again.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        while running.withLock({ $0 }) { MonotonicClock.sleep(nanoseconds: 1_000_000) }
        subscribers += incoming.withLock { list in defer { list.removeAll() }; return list }
    }

    private func run() {
        while !stopping.load(ordering: .acquiring) {
            let now = MonotonicClock.now()
            let next = due.min() ?? now + 50_000_000
            let wait = next <= now ? 0 : Int32(min(50, (next - now + 999_999) / 1_000_000))
            do {
                try poll.wait(milliseconds: wait) { tag in
                    if tag == Self.wakeTag {
                        wake.drain()
                        adopt()
                    } else {
                        read(Int(tag))
                    }
                }
            } catch {
                // epoll itself failed (EBADF, ENOMEM): nothing here can go on.
                failure.withLock { $0 = "\(error)" }
                return
            }
            let after = MonotonicClock.now()
            for index in subscribers.indices where due[index] <= after {
                let wasEnded = subscribers[index].ended
                due[index] = subscribers[index].tick(now: after)
                if !wasEnded, subscribers[index].ended { ended.wrappingAdd(1, ordering: .relaxed) }
            }
        }
    }

    private func adopt() {
        let arrived = incoming.withLock { list in defer { list.removeAll() }; return list }
        for subscriber in arrived {
            let tag = UInt64(subscribers.count)
            subscribers.append(subscriber)
            due.append(0)
            try? poll.add(subscriber.socket.rawValue, tag: tag)
        }
    }

    private func read(_ index: Int) {
        guard index < subscribers.count else { return }
        let subscriber = subscribers[index]
        var source = SocketAddress()
        for _ in 0..<Self.burst {
            guard let count = try? subscriber.socket.receive(into: buffer, from: &source) else { break }
            subscriber.arrived(UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), from: source, now: MonotonicClock.now())
        }
        let wasEnded = subscriber.ended
        due[index] = subscriber.tick(now: MonotonicClock.now())
        if !wasEnded, subscriber.ended { ended.wrappingAdd(1, ordering: .relaxed) }
    }
}
