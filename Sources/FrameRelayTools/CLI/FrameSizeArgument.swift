/// Parses `WIDTHxHEIGHT` (1…16383 each).
import FrameRelayFrames

public func parseSize(_ text: String, option: String) throws -> (width: Int, height: Int) {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else {
        throw UsageError("invalid --\(option) \"\(text)\": expected WIDTHxHEIGHT, for example 1280x720")
    }
    guard (1...FrameMetadata.maxDimension).contains(w), (1...FrameMetadata.maxDimension).contains(h) else {
        throw UsageError("invalid --\(option) \"\(text)\": width and height must be 1...\(FrameMetadata.maxDimension)")
    }
    return (w, h)
}
