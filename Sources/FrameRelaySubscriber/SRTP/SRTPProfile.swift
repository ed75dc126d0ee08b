/// An SRTP protection profile DTLS can agree on (RFC 5764, RFC 7714),
/// named as OpenSSL names it, and the sizes of its keying material.
package enum SRTPProfile: String, Sendable {
    case aeadAES128GCM = "SRTP_AEAD_AES_128_GCM"
    case aes128CMSHA1_80 = "SRTP_AES128_CM_SHA1_80"

    /// Master key and salt lengths in bytes.
    package var keyLength: Int { 16 }
    package var saltLength: Int { self == .aeadAES128GCM ? 12 : 14 }

    /// Bytes SRTCP adds to a packet we protect: the E flag and index, and the tag.
    package var rtcpOverhead: Int { self == .aeadAES128GCM ? 4 + 16 : 4 + 10 }
}

/// The SRTP profile DTLS agreed, and its master keys and salts (key then
/// salt): what this side encrypts with and what the other side does.
package struct SRTPKeys: Sendable {
    package var profile: SRTPProfile
    package var local: [UInt8]
    package var remote: [UInt8]

    package init(profile: SRTPProfile, local: [UInt8], remote: [UInt8]) {
        self.profile = profile
        self.local = local
        self.remote = remote
    }
}
