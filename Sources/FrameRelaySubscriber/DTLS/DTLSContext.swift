internal import CSSL

/// What every subscriber of a process shares for DTLS (RFC 5763/5764): a
/// self-signed P-256 certificate made at start (its SHA-256 fingerprint
/// goes in each SDP answer, as a browser's does) and an OpenSSL context for
/// DTLS clients that offer the SRTP profile Janus takes. One owner frees it.
final class DTLSContext: @unchecked Sendable {
    // @unchecked Sendable: OpenSSL's SSL_CTX is safe to share once set up;
    // after init nothing here is written.
    let context: OpaquePointer
    private let key: OpaquePointer
    private let certificate: OpaquePointer
    /// "sha-256 AB:CD:…", as SDP's `a=fingerprint` carries it.
    let fingerprint: String

    /// The SRTP protection profiles offered in the handshake (RFC 5764
    /// §4.1.2, RFC 7714), most wanted first. AES-GCM costs a fifth of
    /// AES-CM with HMAC-SHA1 here: Debian's libsrtp2 does its crypto
    /// through NSS, which makes an HMAC context per packet (a 1200-byte
    /// packet unprotected in 1.8 µs against 7.7–10.9 µs, 2,000 packets,
    /// two runs each). Janus 1.1 takes either.
    static let srtpProfiles = [SRTPProfile.aeadAES128GCM, .aes128CMSHA1_80]

    init() throws(SubscriberError) {
        guard let key = cssl_generate_p256_key() else { throw .crypto("EVP_EC_gen(P-256)", Self.lastError()) }
        guard let certificate = X509_new() else {
            EVP_PKEY_free(key)
            throw .crypto("X509_new", Self.lastError())
        }
        var made = false
        defer {
            if !made {
                X509_free(certificate)
                EVP_PKEY_free(key)
            }
        }
        X509_set_version(certificate, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(certificate), Int.random(in: 1...Int(Int32.max)))
        X509_gmtime_adj(X509_getm_notBefore(certificate), -86_400)
        X509_gmtime_adj(X509_getm_notAfter(certificate), 30 * 86_400)
        X509_set_pubkey(certificate, key)
        let name = X509_get_subject_name(certificate)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "frame-relay subscriber", -1, -1, 0)
        X509_set_issuer_name(certificate, name)
        guard X509_sign(certificate, key, EVP_sha256()) > 0 else { throw .crypto("X509_sign", Self.lastError()) }
        guard let context = SSL_CTX_new(DTLS_client_method()) else { throw .crypto("SSL_CTX_new", Self.lastError()) }
        guard SSL_CTX_use_certificate(context, certificate) == 1, SSL_CTX_use_PrivateKey(context, key) == 1,
            SSL_CTX_set_tlsext_use_srtp(context, Self.srtpProfiles.map(\.rawValue).joined(separator: ":")) == 0  // 0 is success here
        else {
            SSL_CTX_free(context)
            throw .crypto("SSL_CTX_use_certificate", Self.lastError())
        }
        // Janus's certificate is self-signed: it is trusted by its fingerprint
        // in the offer (checked after the handshake), not by a chain.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        self.context = context
        self.key = key
        self.certificate = certificate
        fingerprint = "sha-256 " + Self.hex(Self.sha256(of: certificate))
        made = true
    }

    deinit {
        SSL_CTX_free(context)
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The SHA-256 digest of a certificate's DER encoding.
    static func sha256(of certificate: OpaquePointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        X509_digest(certificate, EVP_sha256(), &digest, &length)
        return Array(digest.prefix(Int(length)))
    }

    /// A digest as SDP writes it: upper-case hex pairs joined by colons.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined(separator: ":")
    }

    /// OpenSSL's reason for the last failure on this thread.
    static func lastError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
