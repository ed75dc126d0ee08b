internal import CSSL
internal import CZlib

/// STUN (RFC 5389) as an ICE-lite agent needs it (RFC 8445 §2.5): reading
/// the binding requests the full agent (Janus) sends, checking that they
/// carry our credentials, and answering them.
///
/// ### Layout
/// ```
///  0  type (u16: 0x0001 request, 0x0101 success) | length (u16, after the header)
///  4  magic cookie 0x2112A442
///  8  transaction id (12 bytes)
/// 20  attributes: type (u16) | length (u16) | value, padded to 4 bytes
/// ```
/// All big-endian. MESSAGE-INTEGRITY is an HMAC-SHA1 keyed with the
/// receiver's ICE password over the message before it (with the header's
/// length counting it); FINGERPRINT is the CRC-32 of what precedes it,
/// XORed with 0x5354554E.
enum STUN {
    static let headerSize = 20
    static let magicCookie: UInt32 = 0x2112_A442
    static let bindingRequest: UInt16 = 0x0001
    static let bindingSuccess: UInt16 = 0x0101
    static let username: UInt16 = 0x0006
    static let messageIntegrity: UInt16 = 0x0008
    static let xorMappedAddress: UInt16 = 0x0020
    static let useCandidate: UInt16 = 0x0025
    static let fingerprint: UInt16 = 0x8028
    static let fingerprintXor: UInt32 = 0x5354_554E

    /// What a binding request said.
    struct Request {
        /// The transaction id, for the answer.
        var transaction: (UInt64, UInt32)
        /// USE-CANDIDATE: the controlling agent nominated the pair (it may send media now).
        var nominated: Bool
    }

    /// Whether `packet` looks like STUN (RFC 7983: the first byte is 0–3 and the cookie is there).
    static func isSTUN(_ packet: UnsafeRawBufferPointer) -> Bool {
        packet.count >= headerSize && packet[0] < 4 && u32(packet, 4) == magicCookie
    }

    /// Whether `packet` is a STUN request (not an indication or a response).
    static func isRequest(_ packet: UnsafeRawBufferPointer) -> Bool {
        isSTUN(packet) && u16(packet, 0) & 0x0110 == 0
    }

    /// Reads a binding request addressed to `localUsername` (USERNAME is
    /// "ours:theirs": it must start with ours and a colon) and signed with
    /// `password`; nil for anything else (a response, a forged or
    /// malformed request). Never reads past `packet`.
    static func parseRequest(_ packet: UnsafeRawBufferPointer, localUfrag: [UInt8], password: [UInt8]) -> Request? {
        guard isSTUN(packet), u16(packet, 0) == bindingRequest else { return nil }
        let length = Int(u16(packet, 2))
        guard length % 4 == 0, headerSize + length <= packet.count else { return nil }
        let end = headerSize + length
        var offset = headerSize
        var usernameOK = false, nominated = false, integrityAt: Int?
        while offset + 4 <= end {
            let type = u16(packet, offset), size = Int(u16(packet, offset + 2))
            let value = offset + 4
            guard value + size <= end else { return nil }
            switch type {
            case username:
                // "ourUfrag:theirUfrag"
                usernameOK = size > localUfrag.count && packet[value + localUfrag.count] == UInt8(ascii: ":")
                    && localUfrag.indices.allSatisfy { packet[value + $0] == localUfrag[$0] }
            case useCandidate:
                nominated = true
            case messageIntegrity:
                guard size == 20 else { return nil }
                integrityAt = offset
            default:
                break
            }
            // Nothing but FINGERPRINT may follow MESSAGE-INTEGRITY.
            if integrityAt != nil, type != messageIntegrity, type != fingerprint { return nil }
            offset = value + (size + 3) & ~3
        }
        guard usernameOK, let integrityAt, integrityValid(packet, at: integrityAt, password: password) else { return nil }
        return Request(transaction: (packet.loadUnaligned(fromByteOffset: 8, as: UInt64.self), packet.loadUnaligned(fromByteOffset: 16, as: UInt32.self)), nominated: nominated)
    }

    /// Writes the success response to `request`, telling the requester the
    /// IPv4 address and port it was seen from, signed with `password`;
    /// returns its length (64).
    static func writeSuccess(into out: UnsafeMutableRawPointer, request: Request, address: UInt32, port: UInt16, password: [UInt8]) -> Int {
        func put16(_ value: UInt16, _ at: Int) { out.storeBytes(of: value.bigEndian, toByteOffset: at, as: UInt16.self) }
        func put32(_ value: UInt32, _ at: Int) { out.storeBytes(of: value.bigEndian, toByteOffset: at, as: UInt32.self) }
        put16(bindingSuccess, 0)
        put32(magicCookie, 4)
        out.storeBytes(of: request.transaction.0, toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: request.transaction.1, toByteOffset: 16, as: UInt32.self)
        // XOR-MAPPED-ADDRESS, IPv4: family 1, port ^ the cookie's top half, address ^ the cookie.
        put16(xorMappedAddress, 20)
        put16(8, 22)
        put16(0x0001, 24)
        put16(port ^ UInt16(magicCookie >> 16), 26)
        put32(address ^ magicCookie, 28)
        // MESSAGE-INTEGRITY over the 32 bytes before it, the length counting it.
        put16(UInt16(32 - headerSize + 24), 2)
        put16(messageIntegrity, 32)
        put16(20, 34)
        hmacSHA1(key: password, message: UnsafeRawBufferPointer(start: out, count: 32), into: out + 36)
        // FINGERPRINT over the 56 bytes before it, the length counting it.
        put16(UInt16(56 - headerSize + 8), 2)
        put16(fingerprint, 56)
        put16(4, 58)
        put32(crc32(UnsafeRawBufferPointer(start: out, count: 56)) ^ fingerprintXor, 60)
        return 64
    }

    /// Whether the MESSAGE-INTEGRITY attribute at `offset` matches the message before it.
    private static func integrityValid(_ packet: UnsafeRawBufferPointer, at offset: Int, password: [UInt8]) -> Bool {
        // The header's length as if the message ended after MESSAGE-INTEGRITY.
        withUnsafeTemporaryAllocation(byteCount: offset + 20, alignment: 8) { scratch in
            scratch.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[..<offset]))
            scratch.storeBytes(of: UInt16(offset - headerSize + 24).bigEndian, toByteOffset: 2, as: UInt16.self)
            let mac = scratch.baseAddress! + offset
            hmacSHA1(key: password, message: UnsafeRawBufferPointer(rebasing: scratch[..<offset]), into: mac)
            var same: UInt8 = 0
            for index in 0..<20 { same |= scratch[offset + index] ^ packet[offset + 4 + index] }
            return same == 0
        }
    }

    private static func hmacSHA1(key: [UInt8], message: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        var length: UInt32 = 20
        key.withUnsafeBytes { key in
            _ = HMAC(EVP_sha1(), key.baseAddress, Int32(key.count), message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                     out.assumingMemoryBound(to: UInt8.self), &length)
        }
    }

    static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(truncatingIfNeeded: CZlib.crc32(0, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
    }

    private static func u16(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
    private static func u32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 { UInt32(u16(bytes, at)) << 16 | UInt32(u16(bytes, at + 2)) }
}
