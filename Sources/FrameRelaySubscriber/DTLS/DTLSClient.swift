internal import CSSL

/// One subscriber's DTLS client (RFC 6347) over memory BIOs: the
/// subscriber's socket layer feeds it the datagrams that came in and sends
/// what it writes, so that many run on one event loop. Once the handshake
/// is done it checks Janus's certificate against the fingerprint in the
/// offer and exports the SRTP keys (RFC 5764 §4.2).
final class DTLSClient {
    enum State: Equatable {
        case handshaking
        /// Keys exported, the peer's certificate checked.
        case connected
        /// The peer said goodbye (close_notify), or the handshake failed: why.
        case closed(String)
    }

    private let ssl: OpaquePointer
    private let outgoing: OpaquePointer
    private let expectedFingerprint: [UInt8]
    private(set) var state = State.handshaking
    private(set) var keys: SRTPKeys?
    private var read = [UInt8](repeating: 0, count: 2048)
    /// The largest datagram sent (OpenSSL fragments its handshake messages to fit).
    static let mtu = 1200

    /// A client for a peer whose certificate must have `fingerprint` (SHA-256).
    init(context: DTLSContext, fingerprint: [UInt8]) throws(SubscriberError) {
        guard let ssl = SSL_new(context.context) else { throw .crypto("SSL_new", DTLSContext.lastError()) }
        guard let incoming = cssl_datagram_memory_bio(), let outgoing = cssl_datagram_memory_bio() else {
            SSL_free(ssl)
            throw .crypto("BIO_new", DTLSContext.lastError())
        }
        SSL_set_bio(ssl, incoming, outgoing)  // the SSL owns both from here
        SSL_set_connect_state(ssl)
        cssl_set_mtu(ssl, Self.mtu)
        // Retransmit a lost flight after 100 ms (doubling), not OpenSSL's 1 s:
        // Janus may drop a ClientHello that comes before its ICE says connected.
        DTLS_set_timer_cb(ssl) { _, previous in previous == 0 ? 100_000 : min(previous * 2, 2_000_000) }
        self.ssl = ssl
        self.outgoing = outgoing
        expectedFingerprint = fingerprint
    }

    deinit { SSL_free(ssl) }

    /// Starts the handshake (the ClientHello); `send` gets each datagram to send.
    func start(_ send: (UnsafeRawBufferPointer) -> Void) {
        step(send)
    }

    /// Feeds one DTLS datagram from the peer; `send` gets what to answer.
    func receive(_ datagram: UnsafeRawBufferPointer, _ send: (UnsafeRawBufferPointer) -> Void) {
        _ = BIO_write(SSL_get_rbio(ssl), datagram.baseAddress, Int32(datagram.count))
        step(send)
    }

    /// Microseconds until a handshake retransmission is due, if one is.
    var retransmitDue: Int64? {
        guard state == .handshaking else { return nil }
        var microseconds: Int64 = 0
        return cssl_dtls_timeout(ssl, &microseconds) == 1 ? microseconds : nil
    }

    /// Retransmits the last flight when its timer ran out.
    func handleTimeout(_ send: (UnsafeRawBufferPointer) -> Void) {
        guard state == .handshaking else { return }
        if cssl_dtls_handle_timeout(ssl) < 0 { state = .closed("DTLS handshake failed: " + DTLSContext.lastError()) }
        flush(send)
    }

    private func step(_ send: (UnsafeRawBufferPointer) -> Void) {
        switch state {
        case .handshaking:
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                finish()
            } else {
                let error = SSL_get_error(ssl, result)
                if error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE {
                    state = .closed("DTLS handshake failed: " + DTLSContext.lastError())
                }
            }
        case .connected:
            // After the handshake only alerts come (Janus sends no application data):
            // reading them is how a close_notify is seen.
            let result = SSL_read(ssl, &read, Int32(read.count))
            if result <= 0 {
                let error = SSL_get_error(ssl, result)
                if error == SSL_ERROR_ZERO_RETURN {
                    state = .closed("Janus closed the connection (DTLS close_notify)")
                } else if error != SSL_ERROR_WANT_READ {
                    state = .closed("DTLS: " + DTLSContext.lastError())
                }
            }
        case .closed:
            break
        }
        flush(send)
    }

    /// Checks the peer's certificate against the fingerprint and exports the keys.
    private func finish() {
        guard let certificate = SSL_get1_peer_certificate(ssl) else {
            state = .closed("Janus sent no DTLS certificate")
            return
        }
        defer { X509_free(certificate) }
        let fingerprint = DTLSContext.sha256(of: certificate)
        guard fingerprint == expectedFingerprint else {
            state = .closed("Janus's DTLS certificate (sha-256 \(DTLSContext.hex(fingerprint))) does not match the fingerprint in its offer (\(DTLSContext.hex(expectedFingerprint)))")
            return
        }
        guard let selected = SSL_get_selected_srtp_profile(ssl), let profile = SRTPProfile(rawValue: String(cString: selected.pointee.name)) else {
            state = .closed("Janus chose no SRTP profile we offered (\(DTLSContext.srtpProfiles.map(\.rawValue).joined(separator: ", ")))")
            return
        }
        // client key | server key | client salt | server salt
        let key = profile.keyLength, salt = profile.saltLength
        var material = [UInt8](repeating: 0, count: 2 * (key + salt))
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            state = .closed("SSL_export_keying_material: " + DTLSContext.lastError())
            return
        }
        keys = SRTPKeys(profile: profile, local: Array(material[0..<key] + material[2 * key..<2 * key + salt]),
                    remote: Array(material[key..<2 * key] + material[2 * key + salt..<2 * (key + salt)]))
        state = .connected
    }

    /// Sends what OpenSSL wrote. A memory BIO keeps no datagram boundaries,
    /// so the records (13-byte header, its length at bytes 11–12) are packed
    /// into datagrams of at most ``mtu`` bytes, never split.
    private func flush(_ send: (UnsafeRawBufferPointer) -> Void) {
        var pending = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while BIO_ctrl_pending(outgoing) > 0 {
            let n = BIO_read(outgoing, &chunk, Int32(chunk.count))
            guard n > 0 else { break }
            pending += chunk[..<Int(n)]
        }
        pending.withUnsafeBytes { bytes in
            var start = 0, end = 0
            while end + 13 <= bytes.count {
                let record = 13 + (Int(bytes[end + 11]) << 8 | Int(bytes[end + 12]))
                if end > start, end + record - start > Self.mtu {
                    send(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                    start = end
                }
                end = min(bytes.count, end + record)
            }
            if bytes.count > start { send(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
        }
    }

    /// Says goodbye (close_notify) when connected.
    func close(_ send: (UnsafeRawBufferPointer) -> Void) {
        guard state == .connected else { return }
        SSL_shutdown(ssl)
        state = .closed("closed by us")
        flush(send)
    }
}
