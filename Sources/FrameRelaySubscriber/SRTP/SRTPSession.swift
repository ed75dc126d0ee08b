internal import CSRTP

/// One subscriber's SRTP and SRTCP (RFC 3711) with libsrtp2, keyed from
/// the DTLS handshake: Janus's packets are checked and decrypted in place,
/// ours (receiver reports and feedback) encrypted in place.
package final class SRTPSession {
    private var inbound: srtp_t?
    private var outbound: srtp_t?

    /// libsrtp2's one-time set-up, done before the first session.
    private static let initialized: Bool = srtp_init() == srtp_err_status_ok

    package init(keys: SRTPKeys) throws(SubscriberError) {
        guard Self.initialized else { throw .crypto("srtp_init", "libsrtp2 did not initialize") }
        inbound = try Self.session(key: keys.remote, profile: keys.profile, direction: ssrc_any_inbound)
        outbound = try Self.session(key: keys.local, profile: keys.profile, direction: ssrc_any_outbound)
    }

    deinit {
        if let inbound { srtp_dealloc(inbound) }
        if let outbound { srtp_dealloc(outbound) }
    }

    private static func session(key: [UInt8], profile: SRTPProfile, direction: srtp_ssrc_type_t) throws(SubscriberError) -> srtp_t? {
        var key = key
        var policy = srtp_policy_t()
        switch profile {
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aes128CMSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)  // AES_CM_128_HMAC_SHA1_80
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        }
        policy.ssrc.type = direction
        // Room for retransmissions that come after newer packets (NACK).
        policy.window_size = 1024
        var session: srtp_t?
        let status = key.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok else { throw .crypto("srtp_create", "status \(status.rawValue)") }
        return session
    }

    /// Checks and decrypts an SRTP packet in place; its plain length, or nil
    /// when it fails authentication or replays one already taken.
    package func unprotectRTP(_ packet: UnsafeMutableRawBufferPointer) -> Int? {
        var length = Int32(packet.count)
        return srtp_unprotect(inbound, packet.baseAddress, &length) == srtp_err_status_ok ? Int(length) : nil
    }

    /// Checks and decrypts an SRTCP packet in place; its plain length, or nil.
    package func unprotectRTCP(_ packet: UnsafeMutableRawBufferPointer) -> Int? {
        var length = Int32(packet.count)
        return srtp_unprotect_rtcp(inbound, packet.baseAddress, &length) == srtp_err_status_ok ? Int(length) : nil
    }

    /// Encrypts the `length` bytes of RTP at the start of `packet` in place
    /// (which must have room for the tag, 16 bytes); the protected length.
    /// A viewer sends no RTP: this is the sender's side, for tests and benchmarks.
    package func protectRTP(_ packet: UnsafeMutableRawPointer, length: Int) -> Int? {
        var length = Int32(length)
        return srtp_protect(outbound, packet, &length) == srtp_err_status_ok ? Int(length) : nil
    }

    /// Encrypts the `length` bytes of RTCP at the start of `packet` in place
    /// (which must have the profile's ``SRTPProfile/rtcpOverhead`` bytes more); the protected length.
    package func protectRTCP(_ packet: UnsafeMutableRawPointer, length: Int) -> Int? {
        var length = Int32(length)
        return srtp_protect_rtcp(outbound, packet, &length) == srtp_err_status_ok ? Int(length) : nil
    }
}
