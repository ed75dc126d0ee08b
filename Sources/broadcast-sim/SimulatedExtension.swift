import FrameRelayProducer
/// The sample handler of this extension: its App Group comes from the command line.
final class SimulatedExtension: BroadcastSampleHandler {
    let group: String
    init(group: String, slotCapacity: Int) {
        self.group = group
        super.init(slotCapacity: slotCapacity)
    }
    override func appGroupName() -> String { group }
}
