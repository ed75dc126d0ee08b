/// Whether a layer has kept to its bitrate lately: a bucket filled at the
/// layer's bitrate by capture time and emptied by each frame it sends
/// other than a keyframe (libvpx's rate control plans a keyframe's
/// overshoot and pays it back itself), holding at most a second of the
/// rate either way. The top's calm split (``VP8Encoder/setCalm(_:)``)
/// gives the base temporal layer the rate its upper layer leaves unspent,
/// so it holds only while there is such rate: at 300 kbit/s a still 720p
/// screen's refinement never converges and its base frames spent twice
/// their target at either split, and the calm split took the top to
/// 540 kbit/s against 360.
struct LayerSpend {
    private var bytes = 0.0
    private var last: UInt64?

    /// Whether the layer sent no more than its bitrate lately.
    var withinRate: Bool { bytes >= 0 }

    /// A frame of `count` bytes captured at `captureTime` went out, the layer's bitrate `kbps`.
    mutating func sent(_ count: Int, keyframe: Bool, captureTime: UInt64, kbps: Int) {
        let second = Double(kbps) * 125
        if let last, captureTime > last { bytes = min(second, bytes + Double(captureTime - last) / 1e9 * second) }
        last = max(last ?? captureTime, captureTime)
        if !keyframe { bytes = max(-second, bytes - Double(count)) }
    }
}
