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
        .systemLibrary(name: "CMemory"),
        .target(name: "CSegmentGuard"),
        .target(
            name: "FrameRelay",
            dependencies: ["CVpx", "CTurboJPEG", "CYuv", "CXcb", "CLinux", "CMemory", "CSegmentGuard"]
        ),
        .executableTarget(name: "broadcast-sim", dependencies: ["FrameRelay"]),
        .executableTarget(name: "frame-relay", dependencies: ["FrameRelay"]),
        .executableTarget(name: "Benchmarks", dependencies: ["FrameRelay", "CVpx", "CYuv"], path: "Benchmarks", exclude: ["side-by-side.sh", "thread-count.sh"]),
        .testTarget(name: "FrameRelayTests", dependencies: ["FrameRelay", "CVpx", "CTurboJPEG", "CYuv", "CMemory", "CXcb"]),
    ]
)
