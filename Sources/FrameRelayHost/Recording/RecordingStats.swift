/// What a share's recording did: its file, the whole frames and bytes in
/// it, and why it stopped before the share did, if it did (a full disk: the
/// share's other outputs went on).
public struct RecordingStats: Sendable, Codable, Equatable {
    public var path: String
    public var frames: UInt64 = 0
    public var bytes: UInt64 = 0
    /// How long it plays: its last frame's capture time from its first's, + one frame (as the file's length says, up to its 13 h 15 min).
    public var seconds: Double = 0
    public var stopped: String?
    /// It held no frame, and its file was removed.
    public var removed = false

    public init(path: String) { self.path = path }
}
