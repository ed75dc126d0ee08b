@preconcurrency import Glibc

/// Session descriptions (RFC 8866) for our RTP streams.
public enum SDP {
    /// A VP8 stream with SSRC `ssrc` arriving at `destination`, with the
    /// feedback it answers (NACK, PLI, FIR): ffmpeg, ffplay, VLC and
    /// GStreamer open it as written.
    public static func vp8(ssrc: UInt32, destination: Destination) -> String {
        let family = destination.family == AF_INET6 ? "IP6" : "IP4"
        return """
            v=0
            o=- \(ssrc) 1 IN \(family) \(destination.host)
            s=FrameRelay screen share
            c=IN \(family) \(destination.host)
            t=0 0
            m=video \(destination.port) RTP/AVP 96
            a=rtpmap:96 VP8/90000
            a=rtcp:\(destination.rtcpPort)
            a=rtcp-fb:96 nack
            a=rtcp-fb:96 nack pli
            a=rtcp-fb:96 ccm fir
            a=ssrc:\(ssrc) cname:framerelay
            a=recvonly

            """
    }
}
