import Foundation
import FrameRelayHost
import FrameRelayTools

/// Who watches a load-test step's shares through Janus: started once every
/// share's host has opened its mountpoint, and what they saw, per share.
protocol LoadTestWatchers: AnyObject {
    /// Starts watching once every share has its mountpoint; each viewer watches for `seconds`.
    func startIfReady(_ shares: [ShareStats], seconds: Double) throws
    /// The processes watching (their CPU is the viewers' cost).
    var pids: [Int32] { get }
    /// Ends every viewer still running (a step that failed) and waits for it.
    func terminateAll()
    /// Waits for the viewers (at most `grace` seconds past their time) and
    /// returns each share's figures; `traces` are the hosts' per-frame
    /// JSON lines, `names` the shares' App Groups, in the step's order.
    func results(names: [String], traces: [URL], grace: Double) -> [LoadTestReport.Viewers?]
}

/// What a load test's viewers are.
enum ViewerKind: String, CaseIterable, ArgumentValue {
    /// `frame-relay subscribe`: many WebRTC viewers in one process, frames counted without decoding.
    case native
    /// scripts/webrtc-viewer: a Python process per viewer, decoding every frame (the cross-check).
    case aiortc

    init?(argument: String) { self.init(rawValue: argument) }
    static var expectation: String { "native or aiortc" }
}
