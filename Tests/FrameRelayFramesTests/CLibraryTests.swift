import CMemory
import CTurboJPEG
import CVpx
import CYuv
import Testing

/// Each C module links and its shims call into the real library.
@Suite struct CLibraryTests {
    @Test func vpxEncoderInitialisesThroughTheShim() throws {
        var config = vpx_codec_enc_cfg_t()
        #expect(cvpx_screen_share_config(&config, 64, 48, 1, 500) == VPX_CODEC_OK)
        #expect(config.g_w == 64 && config.rc_end_usage == VPX_CBR && config.rc_max_quantizer == 56)
        var context = vpx_codec_ctx_t()
        #expect(cvpx_enc_init(&context, &config) == VPX_CODEC_OK)
        #expect(cvpx_screen_share_controls(&context, -6, 2, 900) == VPX_CODEC_OK)
        vpx_codec_destroy(&context)
        #expect(String(cString: vpx_codec_version_str()).count > 0)
    }

    @Test func turboJPEGRoundTripsAGreyPicture() throws {
        let compressor = try #require(tjInitCompress())
        defer { tjDestroy(compressor) }
        var pixels = [UInt8](repeating: 128, count: 16 * 16 * 4)
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        #expect(tjCompress2(compressor, &pixels, 16, 64, 16, Int32(TJPF_BGRA.rawValue), &jpeg, &size, Int32(TJSAMP_420.rawValue), 90, 0) == 0)
        defer { tjFree(jpeg) }
        let decompressor = try #require(tjInitDecompress())
        defer { tjDestroy(decompressor) }
        var out = [UInt8](repeating: 0, count: 16 * 16 * 4)
        #expect(tjDecompress2(decompressor, jpeg, size, &out, 16, 64, 16, Int32(TJPF_BGRA.rawValue), 0) == 0)
        #expect(abs(Int(out[0]) - 128) <= 2)
        #expect(ctj_pad(13) == 16)
        #expect(ctj_scaled(100, tjscalingfactor(num: 1, denom: 2)) == 50)
    }

    @Test func libyuvConvertsWhiteBGRAToLimitedRangeLuma() {
        var bgra = [UInt8](repeating: 255, count: 4 * 4 * 4)
        var y = [UInt8](repeating: 0, count: 16), u = [UInt8](repeating: 0, count: 4), v = [UInt8](repeating: 0, count: 4)
        #expect(ARGBToI420(&bgra, 16, &y, 4, &u, 2, &v, 2, 4, 4) == 0)
        #expect(y[0] == 235)
        #expect(u[0] == 128 && v[0] == 128)
    }

    /// The ring's frame copy, on both sides of its 2 MiB switch to
    /// non-temporal stores, at every destination alignment and ragged tails.
    @Test(arguments: [4096, (2 << 20) - 1, 2 << 20, (2 << 20) + 63, 8_294_400 + 17])
    func streamCopyCopiesEveryByte(_ count: Int) {
        let source = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 64)
        let target = UnsafeMutableRawPointer.allocate(byteCount: count + 16, alignment: 64)
        defer { source.deallocate(); target.deallocate() }
        for i in 0..<count { source.storeBytes(of: UInt8(truncatingIfNeeded: i &* 31 &+ i >> 11), toByteOffset: i, as: UInt8.self) }
        for offset in [0, 1, 7, 15] {
            target.initializeMemory(as: UInt8.self, repeating: 0xEE, count: count + 16)
            cmem_stream_copy(target + offset, source, count)
            #expect(memcmp(target + offset, source, count) == 0, "offset \(offset)")
            #expect(target.load(fromByteOffset: offset + count, as: UInt8.self) == 0xEE, "wrote past the end at offset \(offset)")
            if offset > 0 { #expect(target.load(fromByteOffset: offset - 1, as: UInt8.self) == 0xEE) }
        }
    }
}
