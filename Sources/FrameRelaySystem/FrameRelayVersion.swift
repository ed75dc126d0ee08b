/// The version `frame-relay --version` and `broadcast-sim --version` print.
public enum FrameRelayVersion {
    public static let string = "0.9.0"
}
