import Synchronization

/// The simulcast layers viewers asked to move to, from the loop's thread
/// (each viewer's ``LayerRule``) to the thread that holds their Janus
/// sessions and sends each `configure`: the latest ask per session.
final class LayerRequests: Sendable {
    private let asked = Mutex<[Int: LayerRule.Layer]>([:])

    func ask(session: Int, _ layer: LayerRule.Layer) {
        asked.withLock { $0[session] = layer }
    }

    /// Every ask since the last take.
    func take() -> [Int: LayerRule.Layer] {
        asked.withLock { asked in
            defer { asked.removeAll() }
            return asked
        }
    }
}
