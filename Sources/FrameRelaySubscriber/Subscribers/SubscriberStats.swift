/// What one subscriber saw, in the units its key names: packets and
/// frames as counts, times in milliseconds (`…Ms`), bytes.
public struct SubscriberStats: Codable, Sendable, Equatable {
    /// "watching" while it runs and after a clean end; otherwise why it stopped.
    public var state = "joining"
    /// It decoded every frame with libvpx (the sampled decoders).
    public var decodes = false
    /// From asking Janus to watch to DTLS and SRTP being up, to the first media packet, and to the first decodable frame.
    public var connectedMs: Double?
    public var firstPacketMs: Double?
    public var firstFrameMs: Double?
    public var packetsExpected: UInt64 = 0
    public var packetsReceived: UInt64 = 0
    /// Packets never received, NACKed ones that came aside.
    public var packetsLost: UInt64 = 0
    public var bytesReceived: UInt64 = 0
    public var duplicates: UInt64 = 0
    /// Sequence numbers asked for again (retries counted), the packets that came so, and those given up on.
    public var nackedPackets: UInt64 = 0
    public var recoveredPackets: UInt64 = 0
    public var givenUpPackets: UInt64 = 0
    public var plisSent: UInt64 = 0
    public var receiverReports: UInt64 = 0
    public var senderReports: UInt64 = 0
    public var framesComplete: UInt64 = 0
    public var framesDecodable: UInt64 = 0
    public var keyframes: UInt64 = 0
    /// Frames the decoder never took (lost, or jumped past by a keyframe).
    public var framesSkipped: UInt64 = 0
    /// Whole frames that waited for an earlier one NACK brought in.
    public var framesHeld: UInt64 = 0
    /// Times a lost frame left the decoder waiting for a keyframe, and how long in all.
    public var keyframeWaits: UInt64 = 0
    public var keyframeWaitMs = 0.0
    /// Gaps between decodable frames longer than max(3 × the mean gap, the mean + 150 ms) (WebRTC's freeze), and their time.
    public var freezes: UInt64 = 0
    public var freezeMs = 0.0
    /// With `decodes`: frames libvpx decoded, its errors, and stamps read from the pictures.
    public var framesDecoded: UInt64 = 0
    public var decodeErrors: UInt64 = 0
    public var stampsRead: UInt64 = 0
    /// Packets that failed SRTP authentication, and SRTP and SRTCP packets of an SSRC the offer did not name (dropped before decrypting).
    public var srtpFailures: UInt64 = 0
    public var strangeSSRCs: UInt64 = 0
    /// STUN requests answered and refused.
    public var stunAnswered: UInt64 = 0
    public var stunRefused: UInt64 = 0
    /// The link's own drops, each way: at random, (downlink) a full rate
    /// queue, and, both ways, a full buffer (a delay longer than it holds).
    public var linkLostIn: UInt64 = 0
    public var linkLostOut: UInt64 = 0
    public var linkQueueDrops: UInt64 = 0
    public var linkBufferDrops: UInt64 = 0
    /// The smoothed round trip from a NACK to the packet it brought (ms).
    public var nackRoundTripMs: Double?
    /// On a simulcast mountpoint: the time at each layer ("substream/temporal": ms), the layer last watched, and the switches asked of Janus.
    public var layerMs: [String: Double] = [:]
    public var layer: String?
    /// The layer it started on, before any step.
    public var firstLayer: String?
    public var layerSwitches: UInt64 = 0
    /// Each step the viewer took: ms after it asked to watch, and the layer ("substream/temporal") it moved to.
    public var layerSteps: [LayerStep] = []
    /// Decodable frames in each second after it asked to watch, and packets
    /// lost after repair in the second each went missing.
    public var framesEachSecond: [UInt16] = []
    public var lostEachSecond: [UInt16] = []

    public struct LayerStep: Codable, Sendable, Equatable {
        public var ms: Double
        public var layer: String
    }

    public init() {}

    /// Residual packet loss, percent of the packets the stream had.
    public var lossPercent: Double { packetsExpected == 0 ? 0 : Double(packetsLost) / Double(packetsExpected) * 100 }
}

extension SubscriberStats {
    /// A group's viewers second by second from when each began to watch:
    /// their mean decodable frames, their mean packets lost after repair, and
    /// their mean layer (substream + temporal / 2) as their layer steps say
    /// (none without layers).
    public static func overTime(_ viewers: [SubscriberStats]) -> (frames: [Double], lost: [Double], layers: [Double]) {
        // Loss may run past the last decodable frame (a viewer waiting for a keyframe at the end).
        let seconds = viewers.map { max($0.framesEachSecond.count, $0.lostEachSecond.count) }.max() ?? 0
        guard seconds > 0 else { return ([], [], []) }
        func mean(_ timeline: (SubscriberStats) -> [UInt16]) -> [Double] {
            (0..<seconds).map { second in
                Double(viewers.map { let each = timeline($0); return second < each.count ? Int(each[second]) : 0 }.reduce(0, +)) / Double(viewers.count)
            }
        }
        let frames = mean(\.framesEachSecond), lost = mean(\.lostEachSecond)
        // Viewers of a mountpoint with layers (those that watched a layer), stepping or not.
        let layered = viewers.filter { $0.firstLayer != nil }
        guard !layered.isEmpty else { return (frames, lost, []) }
        let layers = (0..<seconds).map { second in
            layered.map { viewer -> Double in
                // The layer in force at the second's end: the last step before it, or the one it started on.
                guard let layer = viewer.layerSteps.last(where: { $0.ms < Double(second + 1) * 1000 })?.layer ?? viewer.firstLayer else { return 0 }
                let parts = layer.split(separator: "/").compactMap { Double($0) }
                return parts.count == 2 ? parts[0] + parts[1] / 2 : 0
            }.reduce(0, +) / Double(layered.count)
        }
        return (frames, lost, layers)
    }
}
