import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
/// A producer in the shape of a ReplayKit broadcast upload extension's
/// `RPBroadcastSampleHandler`: override ``appGroupName()`` and feed it one
/// sample per captured frame. No call ever waits for the host.
open class BroadcastSampleHandler {
    /// What happened to one sample.
    public enum SampleResult: Equatable, Sendable {
        /// Published; `replacedUntaken` when it replaced a frame the host never took (a drop).
        case published(replacedUntaken: Bool)
        /// Published into a ring made anew, because another process had
        /// damaged the old one (corrupted, unlinked or shrunk it): why.
        case publishedToNewRing(String)
        /// Skipped to honour the host's requested maximum frame rate.
        case throttled
        /// Ignored: the broadcast is not running (not started, paused or finished).
        case ignored
        /// The host asked the broadcast to stop; call ``broadcastFinished()``.
        case stopRequested
        /// The frame does not fit the ring's slots.
        case tooLarge
        /// The ring was damaged by someone else and could not be made anew.
        case ringFailed(String)
    }

    /// Payload bytes per ring slot: the largest frame the broadcast will send.
    public private(set) var slotCapacity: Int
    /// Store a payload checksum with every frame, so the host can prove none is torn.
    public var checksums = false
    public private(set) var ring: RingProducer?
    public private(set) var isPaused = false
    /// Samples skipped for the host's frame-rate limit.
    public private(set) var throttled: UInt64 = 0
    /// The longest single ``processSample(_:frameNumber:captureTime:orientation:damage:)`` call, in ns.
    public private(set) var maxSampleNanoseconds: UInt64 = 0
    private var lastPublishedCapture: UInt64 = 0
    /// Where samples not published (throttled, ignored or failed) changed
    /// the picture since the last one published: empty when they did not,
    /// nil when one changed it where its capturer could not say.
    private var unpublished: PixelRegion? = PixelRegion()
    /// The last sample that changed the picture (published or not): the frame whose picture the next one carries.
    private var pictureFrame: UInt64?

    public init(slotCapacity: Int) {
        self.slotCapacity = slotCapacity
    }

    /// The App Group shared with the host app. Override it, as call SDKs'
    /// sample handlers override `getAppGroupName()`.
    open func appGroupName() -> String {
        AppGroup.defaultName
    }

    /// Creates the App Group's ring and tells the host the broadcast started.
    open func broadcastStarted(setupInfo: [String: String]? = nil) throws {
        let group = try AppGroup(appGroupName())
        let info = (setupInfo ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
        ring = try RingProducer(appGroup: group, slotCapacity: slotCapacity, setupInfo: info)
        isPaused = false
    }

    /// One captured frame; returns at once whatever the host is doing.
    /// `damage`: what the capturer knows changed since the sample before:
    /// nothing (a still screen: the host need not compare), a region (the
    /// host compares only there), or unknown.
    @discardableResult
    open func processSample(
        _ buffer: PixelBuffer, frameNumber: UInt64, captureTime: UInt64, orientation: Orientation = .up, damage: Damage = .unknown
    ) -> SampleResult {
        process(frameNumber: frameNumber, captureTime: captureTime, damage: damage) { ring, damage, pictureFrame throws(RingError) in
            try ring.publish(buffer, frameNumber: frameNumber, captureTime: captureTime, orientation: orientation, checksum: checksums,
                             damage: damage, pictureFrame: pictureFrame)
        }
    }

    /// One captured frame drawn straight into the ring's free slot (no copy
    /// of the picture in between): `draw` as
    /// ``RingProducer/publish(drawing:height:format:frameNumber:captureTime:orientation:checksum:damage:pictureFrame:draw:)``
    /// takes it, called only when the frame is published (not while paused or throttled).
    @discardableResult
    open func processSample(
        drawing width: Int, height: Int, format: PixelFormat, frameNumber: UInt64, captureTime: UInt64, orientation: Orientation = .up,
        damage: Damage = .unknown, draw: (PixelBuffer, RingSlot) -> Bool
    ) -> SampleResult {
        process(frameNumber: frameNumber, captureTime: captureTime, damage: damage) { ring, damage, pictureFrame throws(RingError) in
            try ring.publish(drawing: width, height: height, format: format, frameNumber: frameNumber, captureTime: captureTime,
                             orientation: orientation, checksum: checksums, damage: damage, pictureFrame: pictureFrame, draw: draw)
        }
    }

    /// What both kinds of sample share: what changed since the last one
    /// published, pausing, the host's stop and frame-rate requests; then `publish`.
    private func process(
        frameNumber: UInt64, captureTime: UInt64, damage: Damage,
        publish: (RingProducer, Damage, UInt64?) throws(RingError) -> Publication
    ) -> SampleResult {
        // What this sample changed since the last one published, with those left out on the way.
        var region = unpublished
        var changes = true
        switch damage {
        case .none: changes = false
        case .region(let changed):
            region?.formUnion(changed)
            changes = !changed.isEmpty
        case .unknown: region = nil
        }
        if changes || pictureFrame == nil { pictureFrame = frameNumber }
        guard let ring, !isPaused else {
            unpublished = region
            return .ignored
        }
        if ring.stopRequested { return .stopRequested }
        if let rate = ring.requestedMaxFrameRate, lastPublishedCapture != 0,
            captureTime &- lastPublishedCapture < 900_000_000 / UInt64(rate)
        {
            throttled += 1
            unpublished = region
            return .throttled
        }
        let start = MonotonicClock.now()
        defer { maxSampleNanoseconds = max(maxSampleNanoseconds, MonotonicClock.now() &- start) }
        do {
            let publication = try publish(ring, region.map(Damage.within) ?? .unknown, pictureFrame)
            guard publication.published else {
                // Not drawn: the host compares the next frame whole.
                unpublished = nil
                return .ignored
            }
            unpublished = PixelRegion()
            lastPublishedCapture = captureTime
            if let reason = publication.ringRecreated { return .publishedToNewRing(reason) }
            return .published(replacedUntaken: publication.replacedUntaken)
        } catch {
            unpublished = region
            if case .frameTooLarge = error { return .tooLarge }
            return .ringFailed(error.description)
        }
    }

    /// Makes the ring's slots hold frames of `capacity` bytes, for a source
    /// whose picture grew (a window resized): a ring anew, the host following.
    open func growSlots(to capacity: Int) throws {
        guard capacity > slotCapacity else { return }
        try ring?.grow(slotCapacity: capacity)
        slotCapacity = capacity
    }

    /// The user paused the broadcast; samples are ignored until resumed.
    open func broadcastPaused() {
        isPaused = true
        ring?.setState(.paused)
    }

    /// The user resumed the broadcast.
    open func broadcastResumed() {
        isPaused = false
        ring?.setState(.resumed)
    }

    /// The broadcast ended: the host is told and the ring's name removed.
    open func broadcastFinished() {
        ring?.finish()
    }
}
