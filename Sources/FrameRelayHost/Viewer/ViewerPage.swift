import FrameRelaySystem

/// The viewer page (`Resources/viewer.html`, built into the code): plays a share's live IVF with WebCodecs into a canvas,
/// or (`?mode=webrtc`) watches the share's Janus mountpoint over WebRTC,
/// and charts frames/s and latency from `/stats.json`. `?share=N` picks the
/// share; `?frames=N` stops after N decoded frames (for headless checks);
/// `?janus=URL` names Janus's HTTP API as the browser reaches it (default:
/// this page's host, at the port the host streams into). In WebRTC mode,
/// `?measure=1` logs each frame's stamp and the time it is shown on the
/// host's CLOCK_MONOTONIC (the page's clock calibrated through `/clock`),
/// and the receiver's `getStats()` every 5 s. It asks Janus for a playout
/// delay of 0 (the playout-delay RTP extension: each frame shown as soon as
/// it is decoded; scripts/janus-latency measured 10–16 ms less glass to
/// glass than Chromium's own jitter buffer, as many freezes on a lossy
/// link); `?playout=N` asks for N × 10 ms, `?playout=none` for none; `?relay=IP:VIEWER:JANUS` sends the
/// media through `frame-relay link-relay` (an impaired link), pointing
/// Janus's candidate at the relay's viewer side and ours at its Janus side.
/// Measuring, the page counts freezes by the subscriber's rule
/// (``freezeRule``, `Resources/freeze-rule.js`) from the RTP timestamps of the frames it receives whole
/// (an encoded transform) and of those it shows, and logs the count with
/// `getStats()`' own.
enum ViewerPage {
    /// The subscriber's `FreezeDetector` in JavaScript, line for line (`Resources/freeze-rule.js`).
    static let freezeRule = String(decoding: PackageResources.freeze_rule_js, as: UTF8.self)

    /// The subscriber's `LayerRule` in JavaScript, line for line (`Resources/layer-rule.js`).
    static let layerRule = String(decoding: PackageResources.layer_rule_js, as: UTF8.self)

    /// The page as a file: the shares' menu and the rules go in at their marks.
    private static let template = String(decoding: PackageResources.viewer_html, as: UTF8.self)
        .replacing("//@include freeze-rule.js\n", with: freezeRule)
        .replacing("//@include layer-rule.js\n", with: layerRule)

    /// The page for these shares (their App Groups, in order, in its menu).
    static func html(shares: [String]) -> String {
        let options = shares.enumerated().map { "<option value=\"\($0.offset)\">\($0.element.htmlEscaped)</option>" }.joined()
        return template.replacing("<!--@shares-->", with: options)
    }
}
