import FrameRelayHTTP
import Testing

/// The HTTP client's framing: an answer is whole by its Content-Length or
/// its last chunk, so a server that keeps the connection open is read all the same.
struct HTTPClientTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\ncontent-length:0\r\n\r\n", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", true),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}\r\n0\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\n\r\n{}", false),
    ])
    func anAnswerIsWholeByItsOwnFraming(_ response: String, _ whole: Bool) {
        #expect(HTTPClient.isComplete(Self.bytes(response)) == whole, "\(response.debugDescription)")
    }

    @Test func chunksAreJoinedAndAMalformedSizeIsRefused() {
        #expect(HTTPClient.dechunk(ArraySlice(Self.bytes("3;x=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"))) == Self.bytes("abcde"))
        #expect(HTTPClient.dechunk(ArraySlice(Self.bytes("FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n"))) == nil)
        #expect(HTTPClient.dechunk(ArraySlice(Self.bytes("9\r\nabc\r\n0\r\n\r\n"))) == nil)
    }
}
