@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRTP

/// The thread that sends one share's RTP streams, off the share's thread:
/// the share hands it a frame's bytes (``enqueue``) and goes on to encode
/// the next, while the thread lets each stream's packets out as its
/// ``RTPSender`` paces them, answers NACKs, sends Sender Reports, and reads
/// the RTCP that comes back, keeping the keyframes asked for until the share
/// takes them (``takeAsked()``). It notes when each frame's last packet left
/// (``departure(queuedAt:)``), which is what ``FrameTiming/sent`` records.
/// The senders are touched only under one lock, held by the thread while it
/// sends and by the share while it queues a frame.
final class Pacer: @unchecked Sendable {
    // @unchecked Sendable: the streams and the rest of `state` are touched only
    // under its lock; the sockets only by the pacer's thread once it started
    // (and before, by the initializer); `wake` is an eventfd, which any thread may signal.

    /// One simulcast stream: its sender (its own SSRC, sequence and PictureID) and where it goes.
    final class Stream {
        var sender: RTPSender
        let destinations: [Destination]
        let rtcpDestinations: [SocketAddress]
        /// Which of its destinations is a Janus mountpoint's port (its substream), if one is.
        let mountpoint: Int?

        init(_ sender: consuming RTPSender, destinations: [Destination], mountpoint: Int? = nil) {
            self.sender = sender
            self.destinations = destinations
            rtcpDestinations = destinations.map(\.rtcpAddress)
            self.mountpoint = mountpoint
        }
    }

    /// When a frame of the top stream was queued, and the count of its sender's released packets at which it has left.
    private struct Waiting {
        var queued: UInt64
        var through: UInt64
    }

    private struct State {
        /// Smallest first; the last is the whole picture.
        var streams: [Stream]
        /// The top stream's frames still in the queue, oldest first.
        var waiting: [Waiting] = []
        /// The last frames that left: when each was queued, and when its last packet went (a ring).
        var departed = [(queued: UInt64, left: UInt64)](repeating: (0, 0), count: 256)
        var departedNext = 0
        /// Keyframes asked for since the share last took them.
        var asked: KeyframeRequests.Streams = []
        /// Janus's keyframe asks that name SSRC 0 (read apart from the streams').
        var janusFeedback = RTCP.Feedback()
        /// What the socket refused: how many packets, and the last error.
        var sendErrors: UInt64 = 0
        var lastSendError: Int32?
        /// Set by ``stop(drainFor:)``: the thread sends what waits until then, and ends.
        var stopAt: UInt64?
        var exited = false
    }

    private let state: Locked<State>
    private let rtpSocket: Socket
    private let rtcpSocket: Socket
    /// Whether feedback from Janus (a simulcast mountpoint) may name SSRC 0.
    private let simulcastHosts: [SocketAddress]
    private let wake: EventSignal
    /// What the thread waits on: the RTCP socket and `wake`.
    private let events: EventPoll
    /// Room for ``feedbackBatch`` datagrams of RTCP, read outside the lock,
    /// and what each was (its length and sender): the pacer's thread alone uses them.
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    private var received: [(count: Int, from: SocketAddress)] = []
    /// The most datagrams of RTCP read at one wake: a flood of them is read
    /// a batch at a time, the lock let go between batches, so the share's
    /// thread still queues its frames (with the whole socket read under the
    /// lock, a NACK flood held a share at 1–8 frames a second).
    private static let feedbackBatch = 32
    private static let datagramRoom = 1500

    init(streams: [Stream], rtp: consuming Socket, rtcp: consuming Socket, simulcastHosts: [SocketAddress]) throws(SystemError) {
        state = Locked(State(streams: streams))
        rtpSocket = rtp
        rtcpSocket = rtcp
        self.simulcastHosts = simulcastHosts
        wake = try EventSignal()
        events = try EventPoll()
        try events.add(rtcpSocket.rawValue, tag: 0)
        try events.add(wake.descriptor.rawValue, tag: 1)
        receiveBuffer = .allocate(byteCount: Self.datagramRoom * Self.feedbackBatch, alignment: 16)
        received.reserveCapacity(Self.feedbackBatch)
        state.withLock { $0.waiting.reserveCapacity(256) }
    }

    deinit { receiveBuffer.deallocate() }

    /// Starts the thread; false when none could be made.
    func start() -> Bool { startDetachedThread { [self] in run() } }

    /// Queues one frame's bytes on `stream` (valid only during the call)
    /// at `now`; returns its PictureID. The top stream's frames are
    /// remembered by `now`, for ``departure(queuedAt:)``.
    func enqueue(_ frame: UnsafeRawBufferPointer, stream index: Int, keyframe: Bool, layer: VP8TemporalLayer?, captureTime: UInt64, now: UInt64) -> UInt16 {
        let pictureID = state.withLock { state in
            let stream = state.streams[index]
            let (pictureID, through) = stream.sender.send(frame, keyframe: keyframe, layer: layer, captureTime: captureTime, now: now)
            if index == state.streams.count - 1 {
                // The oldest is forgotten rather than grow without bound (a thread that stopped sending).
                if state.waiting.count == 256 { state.waiting.removeFirst() }
                state.waiting.append(Waiting(queued: now, through: through))
            }
            return pictureID
        }
        wake.signal()
        return pictureID
    }

    /// What became of the top stream's frame queued at `queued`: when its
    /// last packet left, nil while it waits, or 0 when that is not known
    /// (forgotten, or the pacer stopped first).
    func departure(queuedAt queued: UInt64) -> UInt64? {
        state.withLock { state in
            if let found = state.departed.first(where: { $0.queued == queued }) { return found.left }
            let waits = state.waiting.contains { $0.queued == queued }
            return waits && !state.exited ? nil : 0
        }
    }

    /// The keyframes asked for since the last call.
    func takeAsked() -> KeyframeRequests.Streams {
        state.withLock { state in
            defer { state.asked = [] }
            return state.asked
        }
    }

    /// Each stream's sender's figures, smallest first, and what the socket refused.
    func stats() -> (streams: [TransportStats], sendErrors: UInt64, lastSendError: Int32?) {
        state.withLock { state in (state.streams.map { $0.sender.stats }, state.sendErrors, state.lastSendError) }
    }

    /// What the top stream's encoder may take from its receivers' reports
    /// (``RTPSender/encoderBitrate(now:)``), bits/s (nil: it does not adapt).
    func encoderBitrate(now: UInt64) -> Int? {
        state.withLock { state in
            let top = state.streams.count - 1
            return state.streams[top].sender.controller == nil ? nil : state.streams[top].sender.encoderBitrate(now: now)
        }
    }

    /// Whether every destination of every stream asks for what it misses (``RTPSender/everyDestinationAsks(now:)``).
    func everyDestinationAsks(now: UInt64) -> Bool {
        state.withLock { state in state.streams.allSatisfy { $0.sender.everyDestinationAsks(now: now) } }
    }

    /// Ends the thread once what waits has left, or after `drainFor` ns
    /// (0: at once); with `wait`, returns when it has ended (at most a
    /// second past that).
    func stop(drainFor: UInt64, wait: Bool) {
        let now = MonotonicClock.now()
        state.withLock { $0.stopAt = now &+ drainFor }
        wake.signal()
        guard wait else { return }
        let limit = now &+ drainFor &+ 1_000_000_000
        while !state.withLock({ $0.exited }), MonotonicClock.now() < limit { MonotonicClock.sleep(nanoseconds: 1_000_000) }
    }

    private func run() {
        while true {
            receiveFeedback()
            let now = MonotonicClock.now()
            let (next, done) = state.withLock { state -> (UInt64?, Bool) in
                readFeedback(&state, now: now)
                var next: UInt64?
                for stream in state.streams {
                    if let due = send(stream, state: &state, now: now) { next = min(next ?? due, due) }
                }
                let top = state.streams[state.streams.count - 1].sender.released
                while let first = state.waiting.first, first.through <= top {
                    state.departed[state.departedNext] = (first.queued, now)
                    state.departedNext = (state.departedNext + 1) % state.departed.count
                    state.waiting.removeFirst()
                }
                guard let stopAt = state.stopAt else { return (next, false) }
                let drained = state.streams.allSatisfy { $0.sender.nextPacketDue == nil }
                if drained || now >= stopAt {
                    state.exited = true
                    return (nil, true)
                }
                return (min(next ?? stopAt, stopAt), false)
            }
            if done { return }
            // epoll counts in milliseconds: a packet due within one goes when the wait ends, a little late.
            let timeout = next.map { $0 <= now ? 0 : Int32(min(1000, ($0 - now + 999_999) / 1_000_000)) } ?? 1000
            try? events.wait(milliseconds: timeout) { tag in if tag == 1 { wake.drain() } }
        }
    }

    /// Sends what `stream`'s sender has due by `now`; returns when more is due.
    private func send(_ stream: Stream, state: inout State, now: UInt64) -> UInt64? {
        stream.sender.poll(now: now) { datagram, route in
            switch route {
            case .media: transmit(datagram, to: stream.destinations, state: &state)
            case .repair(let index): transmit(datagram, to: stream.destinations[index...index], state: &state)
            case .control: for destination in stream.rtcpDestinations { _ = try? rtcpSocket.send(datagram, to: destination) }
            }
        }
    }

    private func transmit(_ packet: UnsafeRawBufferPointer, to destinations: some Collection<Destination>, state: inout State) {
        for destination in destinations {
            do {
                // A full socket buffer (nil) drops the packet, as a full network queue would.
                if try rtpSocket.send(packet, to: destination.address) == nil {
                    state.sendErrors += 1
                    state.lastSendError = Errno.wouldBlock.rawValue
                }
            } catch {
                state.sendErrors += 1
                state.lastSendError = error.code.rawValue
            }
        }
    }

    /// Reads up to ``feedbackBatch`` datagrams of RTCP waiting on the socket into `received`, without the lock.
    private func receiveFeedback() {
        received.removeAll(keepingCapacity: true)
        var from = SocketAddress()
        while received.count < Self.feedbackBatch {
            let room = UnsafeMutableRawBufferPointer(rebasing: receiveBuffer[received.count * Self.datagramRoom ..< (received.count + 1) * Self.datagramRoom])
            guard let count = try? rtcpSocket.receive(into: room, from: &from), count > 0 else { return }
            received.append((count, from))
        }
    }

    /// Reads the RTCP just received into each stream's sender (NACKs queue resends),
    /// noting the streams a receiver asked a keyframe on. A PLI or FIR names
    /// its stream by its media SSRC, and only that stream makes a keyframe,
    /// with one exception: Janus (1.1.2) names substream 0's SSRC in every
    /// PLI it passes on, whichever substream its viewer watches
    /// (janus_streaming.c sets the SSRC it names from port 1 only), so a
    /// keyframe asked on stream 0 of a simulcast mountpoint is made on every
    /// stream; and while stream 0 sends nothing (a picture too narrow for
    /// it), Janus names SSRC 0. Such a keyframe ask from the mountpoint's
    /// RTCP port (which Janus sends from) is Janus asking for every
    /// substream: each stream's mountpoint destination counts as asking for
    /// its own, so that periodic keyframes stop on every stream (with them
    /// kept on the top, whose SSRC Janus never names, every layer was keyed
    /// every 3 s). From any other port on Janus's host it marks nothing.
    private func readFeedback(_ state: inout State, now: UInt64) {
        for (index, (count, from)) in received.enumerated() {
            let datagram = UnsafeRawBufferPointer(start: receiveBuffer.baseAddress! + index * Self.datagramRoom, count: count)
            var everyStream = false
            if simulcastHosts.contains(where: { $0.sameHost(as: from) }) {
                state.janusFeedback.reset()
                RTCP.parse(datagram, ssrc: 0, into: &state.janusFeedback)
                everyStream = state.janusFeedback.pictureLoss || state.janusFeedback.fullIntraRequest
            }
            for (index, stream) in state.streams.enumerated() {
                // Feedback speaks for the destinations on its host; a promise, for the one whose RTCP port it comes from.
                let hosts = stream.destinations.indices.filter { stream.destinations[$0].address.sameHost(as: from) }
                let ports = stream.rtcpDestinations.indices.filter { stream.rtcpDestinations[$0].sameHost(as: from) && stream.rtcpDestinations[$0].port == from.port }
                if stream.sender.receiveRTCP(datagram, fromHostOf: hosts, fromRTCPPortOf: ports, now: now).keyframe {
                    if index == 0 && !simulcastHosts.isEmpty { everyStream = true } else { state.asked.insert(.stream(index)) }
                }
            }
            guard everyStream else { continue }
            state.asked.insert(.all)
            for stream in state.streams {
                if let mountpoint = stream.mountpoint, stream.rtcpDestinations[mountpoint].sameHost(as: from),
                   stream.rtcpDestinations[mountpoint].port == from.port {
                    stream.sender.noteAsked(by: mountpoint)
                }
            }
        }
    }
}
