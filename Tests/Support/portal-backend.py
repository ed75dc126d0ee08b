#!/usr/bin/python3
"""A desktop's ScreenCast portal backend for the tests, with no dialog.

xdg-desktop-portal (the frontend every app talks to) hands the ScreenCast
calls to a backend: GNOME's, KDE's, wlroots'. This one implements
org.freedesktop.impl.portal.ScreenCast and answers the chooser itself by
casting through Mutter's own API, so the node the app is given is a real
PipeWire stream of a real compositor, and the frontend's own work (the
session, the restore token kept in the permission store,
OpenPipeWireRemote's PipeWire connection) runs as it does on a desktop.

    portal-backend.py BUS_NAME CHOICE

CHOICE says what the chooser does:
  pick           the monitor (or the focused window) is picked
  cancel         the user cancels the chooser
  never          the chooser stays open: Start is never answered
  restore-only   cancels unless SelectSources brought the restore data
                 of an earlier cast (the chooser was skipped)
  close-after=S  picks, then the session closes S seconds after Start
                 (the user stopped sharing from the desktop's own UI)

It logs one line per call to stderr.
"""
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

IMPL = "org.freedesktop.impl.portal.ScreenCast"
SESSION = "org.freedesktop.impl.portal.Session"
MUTTER = "org.gnome.Mutter.ScreenCast"
VENDOR = "frame-relay-test"


def log(text):
    print(f"portal-backend: {text}", file=sys.stderr, flush=True)


class Session(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.bus = bus
        self.path = path
        self.types = 1
        self.cursor = 1
        self.persist = 0
        self.restored = False
        self.mutter = None

    @dbus.service.method(SESSION, in_signature="", out_signature="")
    def Close(self):
        log(f"Close {self.path}")
        self.stop()
        self.remove_from_connection()

    @dbus.service.signal(SESSION, signature="")
    def Closed(self):
        pass

    def stop(self):
        if self.mutter is not None:
            try:
                self.bus.get_object(MUTTER, self.mutter).Stop(dbus_interface=MUTTER + ".Session")
            except dbus.DBusException as error:
                log(f"stopping Mutter's session: {error}")
            self.mutter = None

    def close_now(self):
        log(f"closing {self.path} from the desktop")
        self.stop()
        self.Closed()
        self.remove_from_connection()
        return False


class ScreenCast(dbus.service.Object):
    def __init__(self, bus, choice):
        super().__init__(bus, "/org/freedesktop/portal/desktop")
        self.bus = bus
        self.choice = choice
        self.sessions = {}

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.GetAll(interface)[name]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        # Monitors and windows; the cursor hidden or embedded (Mutter draws it).
        return {"AvailableSourceTypes": dbus.UInt32(1 | 2), "AvailableCursorModes": dbus.UInt32(1 | 2),
                "version": dbus.UInt32(4)}

    @dbus.service.method(IMPL, in_signature="oosa{sv}", out_signature="ua{sv}")
    def CreateSession(self, handle, session_handle, app_id, options):
        log(f"CreateSession {session_handle}")
        self.sessions[str(session_handle)] = Session(self.bus, session_handle)
        return dbus.UInt32(0), dbus.Dictionary({}, signature="sv")

    @dbus.service.method(IMPL, in_signature="oosa{sv}", out_signature="ua{sv}")
    def SelectSources(self, handle, session_handle, app_id, options):
        session = self.sessions[str(session_handle)]
        session.types = int(options.get("types", 1))
        session.cursor = int(options.get("cursor_mode", 1))
        session.persist = int(options.get("persist_mode", 0))
        restore = options.get("restore_data")
        session.restored = restore is not None and str(restore[0]) == VENDOR
        log(f"SelectSources types={session.types} cursor={session.cursor} persist={session.persist} restored={session.restored}")
        return dbus.UInt32(0), dbus.Dictionary({}, signature="sv")

    @dbus.service.method(IMPL, in_signature="oossa{sv}", out_signature="ua{sv}",
                         async_callbacks=("reply", "error"))
    def Start(self, handle, session_handle, app_id, parent_window, options, reply, error):
        session = self.sessions[str(session_handle)]
        if self.choice == "never":
            log("Start: the chooser stays open")
            return
        if self.choice == "cancel" or (self.choice == "restore-only" and not session.restored):
            log("Start: the chooser was cancelled")
            reply(dbus.UInt32(1), dbus.Dictionary({}, signature="sv"))
            return
        mutter = self.bus.get_object(MUTTER, "/org/gnome/Mutter/ScreenCast")
        session.mutter = mutter.CreateSession(dbus.Dictionary({}, signature="sv"), dbus_interface=MUTTER)
        cast = self.bus.get_object(MUTTER, session.mutter)
        # The portal's cursor bits (1 hidden, 2 embedded, 4 metadata) as Mutter's cursor-mode (0, 1, 2).
        properties = dbus.Dictionary({"cursor-mode": dbus.UInt32({1: 0, 2: 1, 4: 2}[session.cursor])}, signature="sv")
        if session.types == 2:
            stream = cast.RecordWindow(properties, dbus_interface=MUTTER + ".Session")
        else:
            stream = cast.RecordMonitor("", properties, dbus_interface=MUTTER + ".Session")

        def added(node):
            log(f"Start: node {node}")
            results = {"streams": dbus.Array([dbus.Struct((dbus.UInt32(node), dbus.Dictionary(
                {"source_type": dbus.UInt32(session.types)}, signature="sv")))], signature="(ua{sv})")}
            if session.persist:
                results["persist_mode"] = dbus.UInt32(session.persist)
                results["restore_data"] = dbus.Struct((VENDOR, dbus.UInt32(1), dbus.String("monitor", variant_level=1)),
                                                      signature="suv")
            reply(dbus.UInt32(0), dbus.Dictionary(results, signature="sv"))
            if self.choice.startswith("close-after="):
                GLib.timeout_add(int(float(self.choice.split("=", 1)[1]) * 1000), session.close_now)

        self.bus.add_signal_receiver(added, "PipeWireStreamAdded", MUTTER + ".Stream", MUTTER, stream)
        cast.Start(dbus_interface=MUTTER + ".Session")


def main():
    name, choice = sys.argv[1], sys.argv[2]
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    backend = ScreenCast(bus, choice)
    owned = dbus.service.BusName(name, bus)
    log(f"serving {name} ({choice})")
    GLib.MainLoop().run()
    del backend, owned


if __name__ == "__main__":
    main()
