import FrameRelaySystem
/// A producer in the shape of a ReplayKit broadcast upload extension's
/// `RPBroadcastSampleHandler`: override ``appGroupName()`` and feed it one
/// sample per captured frame. No call ever waits for the host.
open class BroadcastSampleHandler {
    /// What happened to one sample.
    public enum SampleResult: Equatable, Sendable {
        /// Published; `replacedUntaken` when it replaced a frame the host never took (a drop).
        case published(replacedUntaken: Bool)
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
    public let slotCapacity: Int
    /// Store a payload checksum with every frame, so the host can prove none is torn.
    public var checksums = false
    public private(set) var ring: RingProducer?
    public private(set) var isPaused = false
    /// Samples skipped for the host's frame-rate limit.
    public private(set) var throttled: UInt64 = 0
    /// The longest single ``processSample(_:frameNumber:captureTime:orientation:)`` call, in ns.
    public private(set) var maxSampleNanoseconds: UInt64 = 0
    private var lastPublishedCapture: UInt64 = 0
    /// Where samples not published (throttled, ignored or failed) changed
    /// the picture since the last one published: empty when they did not,
    /// nil when one changed it where its capturer could not say.
    private var unpublished: PixelRegion? = PixelRegion()

    public init(slotCapacity: Int) {
        self.slotCapacity = slotCapacity
    }

    /// The App Group shared with the host app. Override it, as call SDKs'
    /// sample handlers override `getAppGroupName()`.
    open func appGroupName() -> String {
        "group.com.example.app.ScreenSharingExtension"
    }

    /// Creates the App Group's ring and tells the host the broadcast started.
    open func broadcastStarted(setupInfo: [String: String]? = nil) throws {
        let group = try AppGroup(appGroupName())
        let info = (setupInfo ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";")
        ring = try RingProducer(appGroup: group, slotCapacity: slotCapacity, setupInfo: info)
        isPaused = false
    }

    /// One captured frame; returns at once whatever the host is doing.
    /// `unchanged`: the capturer knows the pixels are those of the sample
    /// before (a still screen); the host then need not compare them.
    /// `changed`: the capturer knows they differ from the sample before only
    /// there; the host then compares only there.
    @discardableResult
    open func processSample(
        _ buffer: PixelBuffer, frameNumber: UInt64, captureTime: UInt64, orientation: Orientation = .up, unchanged: Bool = false,
        changed: PixelRegion? = nil
    ) -> SampleResult {
        // What this sample changed since the last one published, with those left out on the way.
        var region = unpublished
        if !unchanged {
            if let changed { region?.formUnion(changed) } else { region = nil }
        }
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
            let replaced = try ring.publish(
                buffer, frameNumber: frameNumber, captureTime: captureTime, orientation: orientation, checksum: checksums,
                repeatsPrevious: region?.isEmpty == true, changed: region)
            unpublished = PixelRegion()
            lastPublishedCapture = captureTime
            return .published(replacedUntaken: replaced)
        } catch {
            unpublished = region
            if case .frameTooLarge = error { return .tooLarge }
            return .ringFailed(error.description)
        }
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
