/// Where a listening socket binds: an IPv4 address (loopback by default) and a port.
public struct ListenAddress: Sendable, Equatable {
    public var address: String
    public var port: Int

    public init(address: String = "127.0.0.1", port: Int) {
        self.address = address
        self.port = port
    }
}
