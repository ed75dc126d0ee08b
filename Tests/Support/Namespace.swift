@preconcurrency import Glibc
import Foundation
import FrameRelayHTTP
import Testing

// The network namespace the WebRTC tests run in: Janus gathers no ICE
// candidates on loopback, so Janus, hosts and viewers share a namespace of
// their own with a veth pair (`unshare -rn`), Janus on 10.200.0.1.

/// Runs `script` in a fresh network namespace with 10.200.0.1 on a veth
/// pair; `$FR`, `$SIM`, `$VIEWER` and `$D` (a scratch folder) are set.
public func inNamespace(_ script: String, timeout: Double = 90) -> (status: Int32, output: String, directory: String) {
    let dir = Paths.temporaryDirectory().path
    let setup = """
        set -u
        ip link set lo up && ip link add v0 type veth peer name v1 && ip addr add 10.200.0.1/24 dev v0 \
          && ip link set v0 up && ip link set v1 up || exit 97
        FR='\(Paths.executable("frame-relay"))' SIM='\(Paths.executable("broadcast-sim"))' D='\(dir)'
        VIEWER="/usr/bin/python3 \(Paths.root.appendingPathComponent("scripts/webrtc-viewer").path)"
        """
    let result = run("/usr/bin/unshare", ["-rn", "/bin/sh", "-c", setup + "\n" + script], timeout: timeout)
    return (result.status, result.stdout + result.stderr, dir)
}

/// `frame-relay janus` on loopback, once its API answers, and that API's URL.
public func startJanus() throws -> (Spawned, HTTPClient.URL) {
    let janus = Spawned(Paths.executable("frame-relay"), ["janus"])
    try #require(janus.waitForLog("Ctrl-C"), "\(janus.stderr)")
    let text = janus.stderr.components(separatedBy: "janus: ").dropFirst().first?.prefix { $0 != " " } ?? ""
    return (janus, try #require(HTTPClient.URL(String(text)), "\(janus.stderr)"))
}

/// Waits in the script until `file` has `count` lines with `text` (at most
/// `seconds`).
public func waitFor(_ text: String, count: Int = 1, in file: String, seconds: Int = 20) -> String {
    "for i in $(seq \(seconds * 10)); do [ $(grep -c '\(text)' \(file)) -ge \(count) ] && break; sleep 0.1; done"
}
