/// The head of an HTTP/1.x request (its request line and headers), parsed
/// from the bytes a client sent so far. Pure: it reads nothing but `bytes`,
/// so it is what the fuzzer drives.
public struct HTTPRequestHead: Sendable, Equatable {
    /// The most header bytes a request may send (431 past it).
    public static let maxBytes = 16_384

    public var method: String
    public var path: String
    public var query: [String: String]

    /// What the bytes received so far amount to.
    public enum Parse: Equatable {
        /// Not a whole head yet: read more.
        case incomplete
        case request(HTTPRequestHead)
        /// A status line to answer with, such as "400 Bad Request".
        case refused(String)
    }

    /// Parses `bytes`; a head ends at an empty line (CRLF CRLF, or bare LF LF
    /// as some clients send).
    public static func parse(_ bytes: ArraySlice<UInt8>) -> Parse {
        guard let end = headEnd(bytes) else {
            return bytes.count >= maxBytes ? .refused("431 Request Header Fields Too Large") : .incomplete
        }
        guard end <= bytes.startIndex + maxBytes else { return .refused("431 Request Header Fields Too Large") }
        let line = bytes[bytes.startIndex..<end].prefix { $0 != 13 && $0 != 10 }
        let parts = line.split(separator: 32, omittingEmptySubsequences: true)
        guard parts.count == 2 || parts.count == 3, let target = parts.dropFirst().first, target.first == UInt8(ascii: "/") else {
            return .refused("400 Bad Request")
        }
        if parts.count == 3, !parts[2].starts(with: Array("HTTP/1.".utf8)) { return .refused("505 HTTP Version Not Supported") }
        let method = String(decoding: parts[0], as: UTF8.self)
        let split = target.split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if split.count == 2 {
            for pair in split[1].split(separator: UInt8(ascii: "&")) {
                let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
                query[String(decoding: kv[0], as: UTF8.self)] = kv.count == 2 ? String(decoding: kv[1], as: UTF8.self) : ""
            }
        }
        return .request(HTTPRequestHead(method: method, path: String(decoding: split[0], as: UTF8.self), query: query))
    }

    /// The index just past the head's last line, if the empty line that ends it has come.
    private static func headEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
        var index = bytes.startIndex
        var lineStart = true
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 10 {
                if lineStart { return index + 1 }
                lineStart = true
            } else if byte != 13 {
                lineStart = false
            }
            index += 1
        }
        return nil
    }
}
