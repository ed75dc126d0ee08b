@preconcurrency import Glibc
import FrameRelaySystem

/// A minimal HTTP/1.1 client for the few APIs the host talks to (Janus, a
/// child host's viewer): one request per connection, `Connection: close`,
/// a deadline for the whole exchange. Not a general client: no TLS, no
/// redirects, no keep-alive.
public enum HTTPClient {
    /// An `http://HOST[:PORT]/PATH` address.
    public struct URL: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var path: String

        /// Parses `text`; nil unless it is a plain `http://` URL.
        public init?(_ text: String) {
            guard text.hasPrefix("http://") else { return nil }
            let rest = text.dropFirst("http://".count)
            let authority = rest.prefix { $0 != "/" }
            path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let tail = authority[authority.index(after: close)...]
                guard tail.isEmpty || tail.hasPrefix(":") else { return nil }
                port = tail.isEmpty ? 80 : Int(tail.dropFirst()) ?? -1
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                port = Int(authority[authority.index(after: colon)...]) ?? -1
            } else {
                host = String(authority)
                port = 80
            }
            guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        }

        public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }

        /// The same server, another path.
        public func with(path: String) -> URL {
            var url = self
            url.path = path
            return url
        }
    }

    /// What came back: the status code and the body.
    public struct Response: Sendable {
        public var status: Int
        public var body: [UInt8]
    }

    /// Why a request got no response.
    public struct Failure: Error, CustomStringConvertible {
        public var url: String
        public var reason: String
        public var description: String { "\(url): \(reason)" }
    }

    /// Sends `method path` with `body` (JSON when given) and reads the response within `timeout` seconds.
    public static func request(_ method: String, _ url: URL, body: [UInt8]? = nil, timeout: Double = 5) throws(Failure) -> Response {
        func fail(_ reason: String) -> Failure { Failure(url: url.description, reason: reason) }
        let addresses: [SocketAddress]
        do throws(SocketAddress.ResolutionError) {
            addresses = try SocketAddress.resolve(url.host, port: url.port, type: SOCK_STREAM)
        } catch {
            throw fail("cannot resolve \(url.host): \(error.reason)")
        }
        let deadline = MonotonicClock.now() &+ UInt64(timeout * 1e9)
        let socket = try connect(addresses, timeout: timeout, url: url)
        let authority = url.host.contains(":") ? "[\(url.host)]:\(url.port)" : "\(url.host):\(url.port)"
        var head = "\(method) \(url.path) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + (body ?? [])
        do throws(SystemError) {
            try request.withUnsafeBytes { bytes in Result { () throws(SystemError) in try socket.sendAll(bytes) } }.get()
        } catch {
            throw fail("send: \(error.code)")
        }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            // One deadline for the whole answer, however slowly it trickles in.
            guard MonotonicClock.now() < deadline else { throw fail("no whole answer within \(timeout) s") }
            guard response.count < 64 << 20 else { throw fail("an answer over 64 MiB") }
            let received: Int?
            do throws(SystemError) {
                received = try buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try socket.receive(into: bytes) } }.get()
            } catch {
                throw fail("recv: \(error.code)")
            }
            guard let n = received else { throw fail("no answer within \(timeout) s") }  // the receive timeout ran out
            if n == 0 { break }
            response += buffer[..<n]
            // A whole answer on a connection the server keeps open is whole all the same.
            if isComplete(response) { break }
        }
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else { throw fail("not an HTTP response") }
        let statusLine = String(decoding: response[..<end.lowerBound].prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else { throw fail("not an HTTP response") }
        let headers = String(decoding: response[..<end.lowerBound], as: UTF8.self).lowercased()
        let body = response[end.upperBound...]
        guard headers.contains("transfer-encoding: chunked") else { return Response(status: status, body: Array(body)) }
        guard let decoded = dechunk(body) else { throw fail("malformed chunked body") }
        return Response(status: status, body: decoded)
    }

    /// Whether `response` holds a whole answer by its own framing: the
    /// `Content-Length` it names, or the last chunk of a chunked body.
    /// Without either, the answer ends when the server closes.
    package static func isComplete(_ response: [UInt8]) -> Bool {
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else { return false }
        let headers = String(decoding: response[..<end.lowerBound], as: UTF8.self).lowercased().split(separator: "\r\n")
        let body = response[end.upperBound...]
        if headers.contains(where: { $0.hasPrefix("transfer-encoding:") && $0.contains("chunked") }) {
            return body.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)) && dechunk(body) != nil
        }
        guard let field = headers.first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(field.dropFirst("content-length:".count).trimmingPrefix(while: \.isWhitespace)), length >= 0
        else { return false }
        return body.count >= length
    }

    /// A socket connected to the first of `addresses` that answers (localhost: ::1, then 127.0.0.1).
    private static func connect(_ addresses: [SocketAddress], timeout: Double, url: URL) throws(Failure) -> Socket {
        var lastError = Errno.invalidArgument
        for address in addresses {
            do throws(SystemError) {
                let socket = try Socket(family: address.family, type: SOCK_STREAM)
                try? socket.setTimeouts(send: timeout, receive: timeout)
                try socket.connect(to: address)
                return socket
            } catch {
                lastError = error.code
            }
        }
        throw Failure(url: url.description, reason: "cannot connect: \(lastError)")
    }

    /// The body of a `Transfer-Encoding: chunked` response, or nil if it is malformed.
    package static func dechunk(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var body: [UInt8] = []
        var index = bytes.startIndex
        while let lineEnd = bytes[index...].firstRange(of: [13, 10]) {
            let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound].prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
            guard let size = Int(sizeText.filter { $0 != " " && $0 != "\t" }, radix: 16), size >= 0 else { return nil }
            if size == 0 { return body }
            let start = lineEnd.upperBound
            guard size <= bytes.endIndex - start - 2 else { return nil }
            body += bytes[start..<(start + size)]
            index = start + size + 2
        }
        return nil
    }
}
