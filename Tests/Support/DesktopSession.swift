import Foundation

// A Wayland desktop of its own for the screen-cast tests: a private D-Bus
// session (dbus-run-session) with PipeWire and WirePlumber in it and, when
// asked, GNOME's compositor running headless on a virtual monitor.

/// Runs `script` in a fresh D-Bus session with its own runtime folder,
/// after starting `pipewire` and `wireplumber` (when `pipewire`) and
/// `mutter --headless` with a `monitor` virtual monitor (when `mutter`);
/// `$FR`, `$SIM` and `$D` (a scratch folder) are set, and
/// `WAYLAND_DISPLAY` names the compositor's socket. Everything started is
/// stopped at the end.
public func inDesktopSession(_ script: String, pipewire: Bool = true, mutter: Bool = true, monitor: String = "1280x720",
                             timeout: Double = 90) -> (status: Int32, output: String, directory: String) {
    let dir = Paths.temporaryDirectory().path
    let setup = """
        set -u
        FR='\(Paths.executable("frame-relay"))' SIM='\(Paths.executable("broadcast-sim"))' D='\(dir)'
        export XDG_RUNTIME_DIR="$D/run" WAYLAND_DISPLAY=wayland-0
        mkdir -m 700 "$XDG_RUNTIME_DIR"
        DESKTOP=
        trap 'kill $DESKTOP 2>/dev/null; wait $DESKTOP 2>/dev/null' EXIT
        if \(pipewire); then
          pipewire > "$D/pipewire.log" 2>&1 & DESKTOP="$DESKTOP $!"
          for i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/pipewire-0" ] && break; sleep 0.1; done
          wireplumber > "$D/wireplumber.log" 2>&1 & DESKTOP="$DESKTOP $!"
        fi
        if \(mutter); then
          mutter --headless --virtual-monitor \(monitor) --wayland --no-x11 > "$D/mutter.log" 2>&1 & DESKTOP="$DESKTOP $!"
          for i in $(seq 100); do busctl --user status org.gnome.Mutter.ScreenCast > /dev/null 2>&1 && [ -S "$XDG_RUNTIME_DIR/wayland-0" ] && break; sleep 0.1; done
        fi
        """
    let result = run("/usr/bin/dbus-run-session", ["--", "/bin/sh", "-c", setup + "\n" + script], timeout: timeout)
    return (result.status, result.stdout + result.stderr, dir)
}
