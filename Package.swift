// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "FrameRelay",
    products: [
        .library(name: "FrameRelay", targets: ["FrameRelay"]),
        .executable(name: "broadcast-sim", targets: ["broadcast-sim"]),
        .executable(name: "frame-relay", targets: ["frame-relay"]),
        .executable(name: "frame-relay-bench", targets: ["Benchmarks"]),
    ],
    targets: [
        .systemLibrary(name: "CVpx", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CYuv", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CXcb", pkgConfig: "xcb-damage", providers: [.apt(["libxcb-shm0-dev", "libxcb-damage0-dev", "libxcb-xfixes0-dev"])]),
        .systemLibrary(name: "CLinux"),
        .systemLibrary(name: "CSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CMemory"),
        .target(name: "CSegmentGuard"),
        // System calls: descriptors, sockets, addresses, errors, the clock, locks, output files, threads.
        .target(name: "FrameRelaySystem", dependencies: ["CLinux"]),
        // RTP and RTCP on the wire (RFC 3550, 4585, 7741): headers, the VP8 payload, reports, the jitter buffer.
        .target(name: "FrameRelayRTP", dependencies: ["FrameRelaySystem"]),
        // VP8 decoding (libvpx's decoder only) and the frame number stamped in every picture.
        .target(name: "FrameRelayDecoding", dependencies: ["CVpx"]),
        // The HTTP client and the JSON bodies of the APIs it talks to (Janus).
        .target(name: "FrameRelayHTTP", dependencies: ["FrameRelaySystem"]),
        // A WebRTC subscriber of Janus mountpoints that counts frames without
        // decoding them (ICE-lite, DTLS with OpenSSL, SRTP with libsrtp2): the
        // load test's audience. It never sees the encoder.
        .target(
            name: "FrameRelaySubscriber",
            dependencies: ["FrameRelaySystem", "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayHTTP", "CSSL", "CSRTP", "CZlib"]
        ),
        .target(
            name: "FrameRelay",
            dependencies: ["FrameRelaySystem", "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayHTTP",
                           "CVpx", "CTurboJPEG", "CYuv", "CXcb", "CLinux", "CMemory", "CSegmentGuard"]
        ),
        .executableTarget(name: "broadcast-sim", dependencies: ["FrameRelay", "FrameRelaySystem"]),
        .executableTarget(name: "frame-relay", dependencies: ["FrameRelay", "FrameRelaySystem", "FrameRelayHTTP", "FrameRelayDecoding", "FrameRelaySubscriber"]),
        .executableTarget(name: "Benchmarks", dependencies: ["FrameRelay", "FrameRelaySystem", "FrameRelayRTP", "FrameRelayDecoding", "FrameRelaySubscriber", "CVpx", "CYuv"], path: "Benchmarks", exclude: ["side-by-side.sh", "thread-count.sh"]),
        .testTarget(name: "FrameRelayTests", dependencies: ["FrameRelay", "FrameRelaySystem", "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayHTTP", "FrameRelaySubscriber", "CVpx", "CTurboJPEG", "CYuv", "CMemory", "CXcb"]),
    ]
)
