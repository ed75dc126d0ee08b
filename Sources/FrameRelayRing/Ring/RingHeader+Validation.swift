extension RingHeader {
    /// The result of reading a header that someone else wrote.
    enum Inspection {
        /// The creator has not published the magic yet.
        case initializing
        /// A valid ring for the expected App Group, with this slot capacity.
        case ring(capacity: Int)
    }

    /// Checks every header field against the mapping and the App Group we
    /// expect, trusting nothing.
    func inspect(mappedSize: Int, appGroup: AppGroup, segment: String) throws(RingError) -> Inspection {
        guard mappedSize >= RingLayout.headerSize else {
            return .initializing  // ftruncate has not happened yet
        }
        let magic = self.magic.pointee.load(ordering: .acquiring)
        if magic == 0 { return .initializing }
        guard magic == RingLayout.magic else { throw .notARing(segment: segment, magic: magic) }
        let version = plainU32(RingLayout.versionOffset)
        guard version == RingLayout.version else { throw .versionMismatch(segment: segment, found: version) }
        let found = appGroupName
        guard found == appGroup.name else {
            throw .appGroupMismatch(segment: segment, expected: appGroup.name, found: found)
        }
        guard plainU32(RingLayout.headerSizeOffset) == RingLayout.headerSize,
            plainU32(RingLayout.slotCountOffset) == RingLayout.slotCount
        else { throw .malformedHeader(segment: segment, reason: "header size or slot count") }
        let capacity = plainU64(RingLayout.slotCapacityOffset)
        guard capacity > 0, capacity < UInt64(Int32.max) else {
            throw .malformedHeader(segment: segment, reason: "slot capacity \(capacity)")
        }
        let expectedSize = RingLayout.segmentSize(capacity: Int(capacity))
        guard plainU64(RingLayout.slotStrideOffset) == UInt64(RingLayout.slotStride(capacity: Int(capacity))),
            plainU64(RingLayout.segmentSizeOffset) == UInt64(expectedSize), expectedSize == mappedSize
        else {
            throw .malformedHeader(segment: segment, reason: "segment size \(mappedSize) for slot capacity \(capacity)")
        }
        guard SlotState(raw: slotState.pointee.load(ordering: .acquiring)).isValid else {
            throw .malformedHeader(segment: segment, reason: "slot state")
        }
        return .ring(capacity: Int(capacity))
    }
}
