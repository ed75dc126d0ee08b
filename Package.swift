// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "FrameRelay",
    products: [
        // The broadcast extension's side links these and no codec.
        .library(name: "FrameRelayProducer", targets: ["FrameRelayProducer", "FrameRelayRing", "FrameRelayFrames", "FrameRelaySystem"]),
        // The host app's side.
        .library(name: "FrameRelayHost", targets: ["FrameRelayHost", "FrameRelayRing", "FrameRelayFrames", "FrameRelaySystem"]),
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
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CPipeWire", pkgConfig: "libpipewire-0.3", providers: [.apt(["libpipewire-0.3-dev"])]),
        // A PipeWire video stream consumed for its newest picture and damage: SPA's
        // pod builders are inline C and variadic macros, which Swift cannot call.
        .target(name: "CPipeWireStream", dependencies: ["CPipeWire", "CSegmentGuard"]),
        // System calls: descriptors, sockets, addresses, errors, the clock, locks,
        // output files, threads, signals, shared memory and the futex. Nothing
        // above it calls the kernel.
        .target(name: "FrameRelaySystem", dependencies: ["CLinux", "CSegmentGuard"]),
        // Pictures in memory: pixel formats, buffers and their planes, frame
        // metadata, libyuv conversions, JPEG, and the stamp read back by receivers.
        .target(name: "FrameRelayFrames", dependencies: ["FrameRelaySystem", "CYuv", "CTurboJPEG"]),
        // The App Group's shared-memory ring: its layout, the producer's and the
        // host's ends. Both processes link it; it knows no codec.
        .target(name: "FrameRelayRing", dependencies: ["FrameRelaySystem", "FrameRelayFrames", "CMemory"]),
        // The broadcast extension's side: the sample handler and the frame
        // sources (synthetic screen, content models, Y4M files, X11 capture,
        // Wayland screen casts through D-Bus and PipeWire).
        .target(name: "FrameRelayProducer", dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "CXcb", "CSystemd", "CPipeWireStream"]),
        // RTP and RTCP on the wire (RFC 3550, 4585, 7741): headers, the VP8 payload, reports, the jitter buffer.
        .target(name: "FrameRelayRTP", dependencies: ["FrameRelaySystem"]),
        // VP8 decoding (libvpx's decoder only).
        .target(name: "FrameRelayDecoding", dependencies: ["FrameRelayFrames", "CVpx"]),
        // HTTP: the client and the JSON bodies of the APIs it talks to (Janus),
        // and the small server the viewer and metrics are served from.
        .target(name: "FrameRelayHTTP", dependencies: ["FrameRelaySystem"]),
        // Janus, in one place: its JSON API client and errors, streaming
        // mountpoints (create, take back, watch, destroy), a viewer's watch
        // and the SDP of its offer and answer, and a Janus of our own (its
        // configuration, a watchdog) for tests and demos. Host, subscriber
        // and command line all use it.
        .target(name: "FrameRelayJanus", dependencies: ["FrameRelaySystem", "FrameRelayHTTP", "FrameRelayRing"]),
        // The host: takes frames from the ring, converts, encodes VP8 (only
        // what changed), and delivers to RTP, recordings, the viewer and
        // Janus; times every stage; and the plain RTP receive side.
        .target(
            name: "FrameRelayHost",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayRTP", "FrameRelayDecoding",
                           "FrameRelayHTTP", "FrameRelayJanus", "CVpx", "CYuv", "CTurboJPEG"],
            // The viewer page and its freeze rule, files of their own (read, linted and tested as HTML and JS), built into the code.
            resources: [.embedInCode("Viewer/Resources/viewer.html"), .embedInCode("Viewer/Resources/freeze-rule.js"), .embedInCode("Viewer/Resources/layer-rule.js")]
        ),
        // A WebRTC subscriber of Janus mountpoints that counts frames without
        // decoding them (ICE-lite, DTLS with OpenSSL, SRTP with libsrtp2): the
        // load test's audience. It never sees the encoder.
        .target(
            name: "FrameRelaySubscriber",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayHTTP", "FrameRelayJanus",
                           "CSSL", "CSRTP", "CZlib"]
        ),
        // What the command-line programs share: argument parsing, load-test
        // reports and the benchmark gate. No library user imports it.
        .target(name: "FrameRelayTools", dependencies: ["FrameRelaySystem", "FrameRelayFrames"]),
        .executableTarget(name: "broadcast-sim", dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayTools"]),
        .executableTarget(
            name: "frame-relay",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayHost", "FrameRelayRTP",
                           "FrameRelayHTTP", "FrameRelayJanus", "FrameRelayDecoding", "FrameRelaySubscriber", "FrameRelayTools"]
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayHost",
                           "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayJanus", "FrameRelaySubscriber", "FrameRelayTools", "CVpx", "CYuv"],
            path: "Benchmarks", exclude: ["side-by-side.sh", "thread-count.sh", "capture-cost.sh", "multi-res.sh", "multi-res.c"]
        ),
        // What the tests share: the package's paths, spawned programs, test
        // rings and RTP peers, ffmpeg's reading of what we sent.
        .target(
            name: "FrameRelayTestSupport",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayHost", "FrameRelayHTTP"],
            path: "Tests/Support", exclude: ["portal-backend.py", "pipewire-cursor-source.c", "pipewire-source.py"]
        ),
        // Unit tests, one target per library: one process, no program
        // started but a checker (node, python3); `scripts/test --unit` runs them.
        .testTarget(name: "FrameRelaySystemTests", dependencies: ["FrameRelaySystem"]),
        .testTarget(name: "FrameRelayFramesTests", dependencies: ["FrameRelayFrames", "CMemory", "CTurboJPEG", "CVpx", "CYuv"]),
        .testTarget(name: "FrameRelayRingTests", dependencies: ["FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayTestSupport"]),
        .testTarget(
            name: "FrameRelayProducerTests",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayDecoding", "FrameRelayHost",
                           "FrameRelayTools", "FrameRelayTestSupport"]
        ),
        .testTarget(name: "FrameRelayRTPTests", dependencies: ["FrameRelayRTP"]),
        .testTarget(name: "FrameRelayHTTPTests", dependencies: ["FrameRelayHTTP"]),
        .testTarget(
            name: "FrameRelayHostTests",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayDecoding", "FrameRelayHost", "FrameRelayRTP",
                           "FrameRelayTools", "FrameRelayTestSupport"]
        ),
        .testTarget(
            name: "FrameRelaySubscriberTests",
            dependencies: ["FrameRelaySystem", "FrameRelayRTP", "FrameRelayHost", "FrameRelayJanus", "FrameRelaySubscriber", "FrameRelayTestSupport"]
        ),
        // The programs as users run them, against real peers (ffmpeg,
        // GStreamer, Janus, Chromium), and the documentation's checks.
        .testTarget(
            name: "FrameRelayProcessTests",
            dependencies: ["FrameRelaySystem", "FrameRelayFrames", "FrameRelayRing", "FrameRelayProducer", "FrameRelayHost",
                           "FrameRelayRTP", "FrameRelayDecoding", "FrameRelayHTTP", "FrameRelayJanus", "FrameRelaySubscriber", "FrameRelayTools",
                           "FrameRelayTestSupport", "CXcb"]
        ),
    ]
)
