import Foundation

// A Wayland desktop of its own for the screen-cast tests: a private D-Bus
// session (dbus-run-session) with PipeWire and WirePlumber in it and, when
// asked, GNOME's compositor running headless on a virtual monitor.

/// Runs `script` in a fresh D-Bus session with its own runtime folder,
/// after starting `pipewire` and `wireplumber` (when `pipewire`) and
/// `mutter --headless` with a `monitor` virtual monitor (when `mutter`);
/// `$FR`, `$SIM` and `$D` (a scratch folder) are set, and
/// `WAYLAND_DISPLAY` names the compositor's socket. With `portal`,
/// xdg-desktop-portal runs too, its ScreenCast backend being
/// Tests/Support/portal-backend.py with that choice (`pick`, `cancel`,
/// `restore-only`, `close-after=S`); the script may call `portal CHOICE`
/// to start the backend anew with another, and the backend logs to
/// `$D/backend.log`. Restore tokens are kept under `$D/state`.
/// Everything started is stopped at the end.
public func inDesktopSession(_ script: String, pipewire: Bool = true, mutter: Bool = true, monitor: String = "1280x720",
                             portal: String? = nil, timeout: Double = 90) -> (status: Int32, output: String, directory: String) {
    let dir = Paths.temporaryDirectory().path
    let setup = """
        set -u
        FR='\(Paths.executable("frame-relay"))' SIM='\(Paths.executable("broadcast-sim"))' D='\(dir)'
        # Every per-user folder in the scratch one: the permission store, WirePlumber's state, restore tokens.
        export XDG_RUNTIME_DIR="$D/run" WAYLAND_DISPLAY=wayland-0 XDG_STATE_HOME="$D/state" XDG_DATA_HOME="$D/data" XDG_CONFIG_HOME="$D/config"
        mkdir -m 700 "$XDG_RUNTIME_DIR"
        DESKTOP= BACKEND=
        trap 'kill $DESKTOP $BACKEND 2>/dev/null; wait $DESKTOP $BACKEND 2>/dev/null' EXIT
        # The portal's backend, started (anew) with choice $1; xdg-desktop-portal itself once.
        portal() {
          [ -n "$BACKEND" ] && { kill $BACKEND; wait $BACKEND 2>/dev/null; }
          /usr/bin/python3 '\(portalBackend)' org.freedesktop.impl.portal.desktop.framerelaytest "$1" 2>> "$D/backend.log" & BACKEND=$!
          for i in $(seq 50); do busctl --user status org.freedesktop.impl.portal.desktop.framerelaytest > /dev/null 2>&1 && break; sleep 0.1; done
          if [ ! -d "$D/portals" ]; then
            mkdir "$D/portals"
            printf '[portal]\nDBusName=org.freedesktop.impl.portal.desktop.framerelaytest\nInterfaces=org.freedesktop.impl.portal.ScreenCast;\nUseIn=framerelaytest\n' > "$D/portals/framerelaytest.portal"
            XDG_CURRENT_DESKTOP=framerelaytest XDG_DESKTOP_PORTAL_DIR="$D/portals" /usr/libexec/xdg-desktop-portal -r > "$D/portal.log" 2>&1 & DESKTOP="$DESKTOP $!"
            for i in $(seq 50); do busctl --user status org.freedesktop.portal.Desktop > /dev/null 2>&1 && break; sleep 0.1; done
          fi
        }
        # NODE: the first Video/Source node PipeWire has, within 5 s (nodes only: a stream's client may carry its media.class too).
        video_source() {
          for i in $(seq 50); do
            NODE=$(pw-dump 2>/dev/null | python3 -c 'import json, sys; print(*[o["id"] for o in json.load(sys.stdin) if o.get("type") == "PipeWire:Interface:Node" and o.get("info", {}).get("props", {}).get("media.class") == "Video/Source"][:1])')
            [ -n "$NODE" ] && break; sleep 0.1
          done
        }
        if \(pipewire); then
          pipewire > "$D/pipewire.log" 2>&1 & DESKTOP="$DESKTOP $!"
          for i in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/pipewire-0" ] && break; sleep 0.1; done
          wireplumber > "$D/wireplumber.log" 2>&1 & DESKTOP="$DESKTOP $!"
        fi
        if \(mutter); then
          mutter --headless --virtual-monitor \(monitor) --wayland --no-x11 > "$D/mutter.log" 2>&1 & DESKTOP="$DESKTOP $!"
          for i in $(seq 100); do busctl --user status org.gnome.Mutter.ScreenCast > /dev/null 2>&1 && [ -S "$XDG_RUNTIME_DIR/wayland-0" ] && break; sleep 0.1; done
        fi
        \(portal.map { "portal '\($0)'" } ?? "")
        """
    let result = run("/usr/bin/dbus-run-session", ["--", "/bin/sh", "-c", setup + "\n" + script], timeout: timeout)
    return (result.status, result.stdout + result.stderr, dir)
}

/// The portal backend the desktop sessions run (beside this file).
private let portalBackend = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("portal-backend.py").path
/// A PipeWire source the tests pause and resume (beside this file).
public let pipeWireSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("pipewire-source.py").path
/// A PipeWire source sending its cursor as metadata (beside this file; C, compiled by the test that runs it).
public let pipeWireCursorSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("pipewire-cursor-source.c").path
