import FrameRelayFrames
@testable import FrameRelayHost
import Testing

/// A lower layer's refinement of a keyframe in sweeps (``RefreshSchedule/sweeps``),
/// driven by hand on a 20×10-macroblock picture: bands from the top at the
/// finest quantizer, sized by what they pay for, and ended by a large change.
@Suite struct SweepTests {
    /// A schedule that has just coded a keyframe of `keyframeBytes` (200 bytes a macroblock at the finest quantizer, four times its own).
    static func afterKeyframe(keyframeBytes: Int = 10_000) throws -> (RefreshSchedule, EncoderInput) {
        let picture = EncoderInput(try PixelBuffer(width: 320, height: 160, format: .i420))
        var schedule = RefreshSchedule()
        schedule.sweeps = true
        schedule.prepare(columns: 20, rows: 10)
        schedule.withDamage { $0.update(repeating: 1, count: 200) }
        #expect(schedule.plan(keyframe: true) == .everything)
        schedule.restart()
        schedule.noteBand(bytes: keyframeBytes, keyframe: true)
        schedule.baseEncoded()
        schedule.converge(source: picture, reconstruction: picture, quantizer: 40, measure: false)
        return (schedule, picture)
    }

    static func stillFrame(_ schedule: inout RefreshSchedule, allowance: Int) -> RefreshSchedule.Plan {
        schedule.prepare(columns: 20, rows: 10)
        schedule.bandAllowance = allowance
        return schedule.plan(keyframe: false)
    }

    @Test func bandsGoFromTheTopAtTheFinestQuantizerAsTheirBytesArePaidFor() throws {
        var (schedule, picture) = try Self.afterKeyframe()
        // Nothing paid for: every macroblock waits for its band, and the frame is not encoded.
        #expect(Self.stillFrame(&schedule, allowance: 0) == .skip)
        #expect(schedule.refiningCount == 200)
        // 1,000 bytes at 200 a macroblock: the first five in raster order, in the band segment.
        #expect(Self.stillFrame(&schedule, allowance: 1_000) == .some(5))
        #expect(schedule.activeMap.indices.filter { schedule.activeMap[$0] != 0 } == Array(0..<5))
        let segments = schedule.withMaps { _, segments in segments.map { Array(UnsafeBufferPointer(start: $0, count: 200)) } }
        #expect(try #require(segments).prefix(5).allSatisfy { $0 == VP8Encoder.Segment.band })
        // Coded at the finest quantizer, a band is refined at once; the next starts where it ended.
        schedule.noteBand(bytes: 1_000, keyframe: false)
        schedule.baseEncoded()
        schedule.converge(source: picture, reconstruction: picture, quantizer: 50, measure: true)
        #expect(schedule.refiningCount == 195)
        #expect(Self.stillFrame(&schedule, allowance: 1_000) == .some(5))
        #expect(schedule.activeMap.indices.filter { schedule.activeMap[$0] != 0 } == Array(5..<10))
        // That band cost 2,000 bytes (400 a macroblock): the next is two.
        schedule.noteBand(bytes: 2_000, keyframe: false)
        schedule.converge(source: picture, reconstruction: picture, quantizer: 50, measure: true)
        #expect(Self.stillFrame(&schedule, allowance: 1_000) == .some(2))
        #expect(schedule.activeMap.indices.filter { schedule.activeMap[$0] != 0 } == [10, 11])
        // A frame that codes a change besides its band teaches nothing: its bytes are not the band's.
        schedule.prepare(columns: 20, rows: 10)
        schedule.withDamage { $0[199] = 1 }
        schedule.bandAllowance = 1_000
        #expect(schedule.plan(keyframe: false) == .some(3))
        schedule.noteBand(bytes: 100_000, keyframe: false)
        schedule.converge(source: picture, reconstruction: picture, quantizer: 50, measure: true)
        #expect(Self.stillFrame(&schedule, allowance: 1_000) == .some(3))  // two of the band and the change refining
        // The estimate never exceeds the bucket's cap: a full bucket pays for a macroblock however dear the last band was.
        schedule.bandBytesMost = 300
        schedule.noteBand(bytes: 100_000, keyframe: false)
        #expect(Self.stillFrame(&schedule, allowance: 300) == .some(2))  // one of the band and the change refining
    }

    /// A wide band (over an eighth of the picture) keeps what is kept
    /// kept, so no neighbour filters the band's edges; a band is never over
    /// a third of the picture.
    @Test func aWideBandKeepsItsNeighboursUnfilteredAndNoBandIsOverAThird() throws {
        var (schedule, _) = try Self.afterKeyframe()
        #expect(Self.stillFrame(&schedule, allowance: 6_000) == .some(30))
        let segments = try #require(schedule.withMaps { _, segments in segments.map { Array(UnsafeBufferPointer(start: $0, count: 200)) } })
        #expect(segments.prefix(30).allSatisfy { $0 == VP8Encoder.Segment.band })
        #expect(segments.dropFirst(30).allSatisfy { $0 == VP8Encoder.Segment.kept })
        var (wide, _) = try Self.afterKeyframe()
        #expect(Self.stillFrame(&wide, allowance: 1_000_000) == .some(66))
    }

    /// The bucket a sweep's bands are paid from: filled at the layer's
    /// bitrate by capture time, a frame interval's worth a frame whose clock
    /// stands still, capped at two base frames' share, and emptied by what
    /// the layer sends, a keyframe from empty.
    @Test func theSweepBudgetFillsAtTheLayersRate() {
        var budget = SweepBudget(bitrateKbps: 375, frameRate: 30, baseFrameRate: 15)  // 46,875 bytes/s, at most 6,250
        func near(_ bytes: Int, _ expected: Int) -> Bool { abs(bytes - expected) <= 1 }
        #expect(budget.most == 6_250)
        #expect(budget.allowance(at: 1_000_000_000) == 0)
        #expect(near(budget.allowance(at: 1_064_000_000), 3_000))
        #expect(near(budget.allowance(at: 1_064_000_000), 4_562))  // the clock stood still: a frame interval's worth
        budget.spent(2_000, keyframe: false)
        #expect(near(budget.allowance(at: 1_100_000_000), 4_250))
        budget.spent(20_000, keyframe: false)
        budget.spent(10_000, keyframe: true)  // what was owed before the keyframe is forgotten: 10,000 owed
        #expect(budget.allowance(at: 1_200_000_000) == 0)
        #expect(budget.allowance(at: 1_300_000_000) == 0)
        #expect(near(budget.allowance(at: 1_400_000_000), 4_062))
        #expect(budget.allowance(at: 9_000_000_000) == 6_250)
    }

    /// A keyframe soon after a large change (a screen that scrolls every few
    /// seconds) is not swept: it refines at each base frame, as the top's
    /// does; one after ``RefreshSchedule/calmFrames`` frames without one is.
    @Test func aKeyframeSoonAfterALargeChangeIsNotSwept() throws {
        var (schedule, picture) = try Self.afterKeyframe()
        func keyframe(after frames: Int) -> RefreshSchedule.Plan {
            for _ in 0..<frames { _ = Self.stillFrame(&schedule, allowance: 0) }
            schedule.prepare(columns: 20, rows: 10)
            _ = schedule.plan(keyframe: true)
            schedule.restart()
            schedule.baseEncoded()
            schedule.converge(source: picture, reconstruction: picture, quantizer: 40, measure: false)
            return Self.stillFrame(&schedule, allowance: 0)
        }
        schedule.prepare(columns: 20, rows: 10)
        schedule.withDamage { $0.update(repeating: 1, count: 50) }
        _ = schedule.plan(keyframe: false)
        #expect(keyframe(after: RefreshSchedule.calmFrames - 3) == .everything)
        #expect(keyframe(after: RefreshSchedule.calmFrames) == .skip)
    }

    @Test(arguments: [false, true])
    func aLargeChangeEndsTheSweep(inUpperLayer: Bool) throws {
        var (schedule, picture) = try Self.afterKeyframe()
        // A quarter of the macroblocks change (a scroll), in a base or an upper-layer frame.
        schedule.prepare(columns: 20, rows: 10)
        schedule.withDamage { $0.update(repeating: 1, count: 50) }
        _ = inUpperLayer ? schedule.planUpper() : schedule.plan(keyframe: false)
        if !inUpperLayer {
            schedule.baseEncoded()
            schedule.converge(source: picture, reconstruction: picture, quantizer: 40, measure: false)
        }
        // What waited for its band stops refining (the polish takes it up when the screen comes to rest):
        // the next base frame refines the change alone, and no band comes.
        #expect(schedule.refiningCount == 50)
        #expect(Self.stillFrame(&schedule, allowance: 100_000) == .some(50))
        #expect(schedule.activeMap.indices.filter { schedule.activeMap[$0] != 0 } == Array(0..<50))
        // A smaller change leaves the sweep on: only it refines, the rest waits for its band.
        var (small, _) = try Self.afterKeyframe()
        small.prepare(columns: 20, rows: 10)
        small.withDamage { $0.update(repeating: 1, count: 49) }
        _ = inUpperLayer ? small.planUpper() : small.plan(keyframe: false)
        #expect(Self.stillFrame(&small, allowance: 0) == .some(49))
        #expect(small.refiningCount == 200)
    }
}
