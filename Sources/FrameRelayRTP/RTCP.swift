/// RTCP packets we send (Sender Report; a receiver's report, NACK, PLI,
/// FIR, REMB) and read (receiver reports and feedback: PLI, FIR, generic
/// NACK, REMB), RFC 3550 / 4585 / 5104, draft-alvestrand-rmcat-remb, and the
/// one application packet of our own. Every writer has a byte-exact vector
/// in `RTCPTests`.
package enum RTCP {
    package static let senderReport: UInt8 = 200
    package static let receiverReport: UInt8 = 201
    package static let application: UInt8 = 204
    package static let transportFeedback: UInt8 = 205  // FMT 1: generic NACK
    package static let payloadFeedback: UInt8 = 206  // FMT 1: PLI, FMT 4: FIR

    /// What a compound RTCP packet asked of us.
    package struct Feedback {
        package var pictureLoss = false
        package var fullIntraRequest = false
        package var firSequence: UInt8?
        /// Sequence numbers a receiver asks to have resent (at most ``maxNacked``: what a sender keeps).
        package var nacked: [UInt16] = []
        package static let maxNacked = RetransmissionHistory.capacity
        package var receiverReports = 0
        /// Fraction lost (0–255) from the last report block about us.
        package var fractionLost: UInt8?
        /// The receiver said it asks for what it misses in our stream (``writeAsksForRepair(into:sender:media:)``).
        package var asksForRepair = false
        /// The bitrate a REMB naming our stream allows (bits/s), the last one in the packet.
        package var estimatedBitrate: UInt64?

        package init() {}

        /// Clears it for the next packet, keeping the NACK list's storage.
        package mutating func reset() {
            pictureLoss = false
            fullIntraRequest = false
            nacked.removeAll(keepingCapacity: true)
            receiverReports = 0
            fractionLost = nil
            asksForRepair = false
            estimatedBitrate = nil
        }
    }

    /// The name of the APP packet (RFC 3550 §6.7) with which a receiver says
    /// it sends NACK and PLI when it misses something: the RTCP counterpart
    /// of SDP's `a=rtcp-fb:96 nack pli` in WebRTC, for plain RTP, where no
    /// offer and answer carry it. A stream whose receivers all say so needs no
    /// periodic keyframes.
    package static let asksForRepairName: UInt32 = 0x4652_6662  // "FRfb"

    /// Writes a 32-byte Receiver Report with one report block into `out`.
    package static func writeReceiverReport(into out: UnsafeMutableRawPointer, sender: UInt32, media: UInt32, block: ReceptionStatistics.Block) -> Int {
        writeHeader(into: out, count: 1, type: receiverReport, words: 7, sender: sender, then: media)  // one report block, about `media`
        let lost = UInt32(bitPattern: block.cumulativeLost) & 0xFF_FFFF
        out.storeBytes(of: (UInt32(block.fractionLost) << 24 | lost).bigEndian, toByteOffset: 12, as: UInt32.self)
        out.storeBytes(of: block.extendedHighestSequence.bigEndian, toByteOffset: 16, as: UInt32.self)
        out.storeBytes(of: block.jitter.bigEndian, toByteOffset: 20, as: UInt32.self)
        out.storeBytes(of: block.lastSenderReport.bigEndian, toByteOffset: 24, as: UInt32.self)
        out.storeBytes(of: block.delaySinceLastSenderReport.bigEndian, toByteOffset: 28, as: UInt32.self)
        return 32
    }

    /// Writes the 16-byte APP packet named ``asksForRepairName`` into `out`:
    /// its data is the SSRC of the stream the receiver follows, so that it
    /// speaks for one stream only, as a PLI or NACK does.
    package static func writeAsksForRepair(into out: UnsafeMutableRawPointer, sender: UInt32, media: UInt32) -> Int {
        writeHeader(into: out, count: 0, type: application, words: 3, sender: sender, then: asksForRepairName)
        out.storeBytes(of: media.bigEndian, toByteOffset: 12, as: UInt32.self)
        return 16
    }

    package static let senderReportSize = 28

    /// Writes a 28-byte Sender Report into `out`.
    package static func writeSenderReport(into out: UnsafeMutableRawPointer, ssrc: UInt32, ntp: UInt64, rtpTimestamp: UInt32, packets: UInt32, octets: UInt32) {
        out.storeBytes(of: 0x80, as: UInt8.self)
        out.storeBytes(of: senderReport, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: UInt16(6).bigEndian, toByteOffset: 2, as: UInt16.self)
        out.storeBytes(of: ssrc.bigEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: ntp.bigEndian, toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: rtpTimestamp.bigEndian, toByteOffset: 16, as: UInt32.self)
        out.storeBytes(of: packets.bigEndian, toByteOffset: 20, as: UInt32.self)
        out.storeBytes(of: octets.bigEndian, toByteOffset: 24, as: UInt32.self)
    }

    /// Writes a generic NACK (RFC 4585 §6.2.1) for `sequences` (sorted, in
    /// wrap-around order) into `out`: one FCI (a packet id and a bitmask of
    /// the 16 after it) per run; returns its length, 12 + 4 per FCI.
    package static func writeNACK(into out: UnsafeMutableRawPointer, sender: UInt32, media: UInt32, sequences: some RandomAccessCollection<UInt16>) -> Int {
        var length = 12
        var index = sequences.startIndex
        while index != sequences.endIndex {
            let first = sequences[index]
            var mask: UInt16 = 0
            sequences.formIndex(after: &index)
            while index != sequences.endIndex {
                let distance = sequences[index] &- first
                guard distance >= 1, distance <= 16 else { break }
                mask |= 1 << (distance - 1)
                sequences.formIndex(after: &index)
            }
            out.storeBytes(of: first.bigEndian, toByteOffset: length, as: UInt16.self)
            out.storeBytes(of: mask.bigEndian, toByteOffset: length + 2, as: UInt16.self)
            length += 4
        }
        writeHeader(into: out, count: 1, type: transportFeedback, words: UInt16(length / 4 - 1), sender: sender, then: media)
        return length
    }

    /// Writes an 8-byte Receiver Report with no report block: the head of a
    /// compound packet whose point is the feedback after it (RFC 3550 §6.1).
    package static func writeEmptyReceiverReport(into out: UnsafeMutableRawPointer, sender: UInt32) -> Int {
        out.storeBytes(of: 0x80, as: UInt8.self)
        out.storeBytes(of: receiverReport, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: UInt16(1).bigEndian, toByteOffset: 2, as: UInt16.self)
        out.storeBytes(of: sender.bigEndian, toByteOffset: 4, as: UInt32.self)
        return 8
    }

    /// Writes a 12-byte Picture Loss Indication (RFC 4585 §6.3.1) into `out`.
    package static func writePLI(into out: UnsafeMutableRawPointer, sender: UInt32, media: UInt32) -> Int {
        writeHeader(into: out, count: 1, type: payloadFeedback, words: 2, sender: sender, then: media)
        return 12
    }

    /// Writes a 20-byte Full Intra Request (RFC 5104 §4.3.1) for `media` with
    /// command sequence number `sequence` into `out` (the header's media SSRC is 0, as the RFC has it).
    package static func writeFIR(into out: UnsafeMutableRawPointer, sender: UInt32, media: UInt32, sequence: UInt8) -> Int {
        writeHeader(into: out, count: 4, type: payloadFeedback, words: 4, sender: sender, then: 0)
        out.storeBytes(of: media.bigEndian, toByteOffset: 12, as: UInt32.self)
        out.storeBytes(of: (UInt32(sequence) << 24).bigEndian, toByteOffset: 16, as: UInt32.self)  // then 3 reserved bytes
        return 20
    }

    /// The unique identifier of a REMB (draft-alvestrand-rmcat-remb): "REMB".
    static let rembIdentifier: UInt32 = 0x5245_4D42

    /// Writes a Receiver Estimated Maximum Bitrate (PT 206, FMT 15) of
    /// `bitrate` bits/s for `media` (each SSRC the estimate covers) into
    /// `out`: the bitrate as an 18-bit mantissa times 2 to a 6-bit exponent,
    /// rounded down; returns its length, 20 + 4 per SSRC.
    package static func writeREMB(into out: UnsafeMutableRawPointer, sender: UInt32, bitrate: UInt64, media: [UInt32]) -> Int {
        writeHeader(into: out, count: 15, type: payloadFeedback, words: UInt16(4 + media.count), sender: sender, then: 0)
        var exponent: UInt32 = 0, mantissa = bitrate
        while mantissa >= 1 << 18, exponent < 63 {
            mantissa >>= 1
            exponent += 1
        }
        out.storeBytes(of: rembIdentifier.bigEndian, toByteOffset: 12, as: UInt32.self)
        let word = UInt32(media.count & 0xFF) << 24 | exponent << 18 | UInt32(min(mantissa, (1 << 18) - 1))
        out.storeBytes(of: word.bigEndian, toByteOffset: 16, as: UInt32.self)
        for (index, ssrc) in media.enumerated() { out.storeBytes(of: ssrc.bigEndian, toByteOffset: 20 + 4 * index, as: UInt32.self) }
        return 20 + 4 * media.count
    }

    /// The 12 bytes these packets begin with: version 2, `count` (report
    /// blocks, feedback format or APP subtype), `type`, the length in words
    /// less one, the sender's SSRC, then one word (the media SSRC, or the APP name).
    private static func writeHeader(into out: UnsafeMutableRawPointer, count: UInt8, type: UInt8, words: UInt16, sender: UInt32, then word: UInt32) {
        out.storeBytes(of: 0x80 | count, as: UInt8.self)
        out.storeBytes(of: type, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: words.bigEndian, toByteOffset: 2, as: UInt16.self)
        out.storeBytes(of: sender.bigEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: word.bigEndian, toByteOffset: 8, as: UInt32.self)
    }

    /// Parses a compound packet, keeping only what concerns `ssrc`. Never
    /// reads past `bytes`; malformed input ends the parse.
    package static func parse(_ bytes: UnsafeRawBufferPointer, ssrc: UInt32, into feedback: inout Feedback) {
        var offset = 0
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) << 16 | UInt32(u16(at + 2)) }
        while offset + 4 <= bytes.count {
            let first = bytes[offset]
            guard first >> 6 == 2 else { return }
            let count = Int(first & 0x1F)
            let type = bytes[offset + 1]
            let length = (Int(u16(offset + 2)) + 1) * 4
            guard offset + length <= bytes.count else { return }
            switch type {
            case receiverReport, senderReport:
                feedback.receiverReports += 1
                let blocks = offset + (type == senderReport ? 28 : 8)
                for block in 0..<count where blocks + block * 24 + 24 <= offset + length {
                    let at = blocks + block * 24
                    if u32(at) == ssrc { feedback.fractionLost = bytes[at + 4] }
                }
            case application where length >= 16 && u32(offset + 8) == asksForRepairName && u32(offset + 12) == ssrc:
                feedback.asksForRepair = true
            case payloadFeedback where length >= 12:
                let media = u32(offset + 8)
                // Only for our stream: a PLI for SSRC 0 or another's is not ours to answer.
                if count == 1, media == ssrc { feedback.pictureLoss = true }
                if count == 15, length >= 20, u32(offset + 12) == rembIdentifier {
                    let word = u32(offset + 16), ssrcs = Int(word >> 24)
                    // An 18-bit mantissa shifted by up to 63 would wrap: past 2^63 bit/s, the most there is.
                    let mantissa = UInt64(word & 0x3_FFFF), exponent = UInt64((word >> 18) & 0x3F)
                    let bitrate = mantissa == 0 ? 0 : exponent >= UInt64(mantissa.leadingZeroBitCount) ? UInt64.max : mantissa << exponent
                    for index in 0..<ssrcs where offset + 20 + 4 * index + 4 <= offset + length {
                        if u32(offset + 20 + 4 * index) == ssrc { feedback.estimatedBitrate = bitrate }
                    }
                }
                if count == 4 {
                    var at = offset + 12
                    while at + 8 <= offset + length {
                        if u32(at) == ssrc {
                            feedback.fullIntraRequest = true
                            feedback.firSequence = bytes[at + 4]
                        }
                        at += 8
                    }
                }
            case transportFeedback where count == 1 && length >= 16 && u32(offset + 8) == ssrc:
                // At most the sender's history: a flood of NACKs naming thousands of packets each costs no more than that.
                var at = offset + 12
                while at + 4 <= offset + length, feedback.nacked.count < Feedback.maxNacked {
                    let first = u16(at), mask = u16(at + 2)
                    feedback.nacked.append(first)
                    for bit in 0..<16 where mask & (1 << bit) != 0 && feedback.nacked.count < Feedback.maxNacked {
                        feedback.nacked.append(first &+ UInt16(bit + 1))
                    }
                    at += 4
                }
            default:
                break
            }
            offset += length
        }
    }
}
