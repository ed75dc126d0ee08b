/// An SRTP protection profile DTLS can agree on (RFC 5764, RFC 7714),
/// named as OpenSSL names it, and the sizes of its keying material.
enum SRTPProfile: String, Sendable {
    case aeadAES128GCM = "SRTP_AEAD_AES_128_GCM"
    case aes128CMSHA1_80 = "SRTP_AES128_CM_SHA1_80"

    /// Master key and salt lengths in bytes.
    var keyLength: Int { 16 }
    var saltLength: Int { self == .aeadAES128GCM ? 12 : 14 }

    /// Bytes SRTCP adds to a packet we protect: the E flag and index, and the tag.
    var rtcpOverhead: Int { self == .aeadAES128GCM ? 4 + 16 : 4 + 10 }
}
