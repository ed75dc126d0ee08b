@preconcurrency import Glibc
internal import CSystemd
import FrameRelaySystem

/// The user's session D-Bus through sd-bus (libsystemd): method calls whose
/// arguments are strings, object paths, numbers and `a{sv}` options, their
/// replies read a value at a time (results dictionaries and file
/// descriptors too), and the signals a screen cast answers with.
/// sd-bus over libdbus: one small C API with a blocking call, its own
/// message reader, and no main loop to run (libdbus's low-level API says
/// of itself that it is not meant for applications).
final class SessionBus {
    /// One value of a call's arguments or an `a{sv}` option.
    enum Value {
        case string(String)
        case objectPath(String)
        case uint32(UInt32)
        case bool(Bool)
        case options([(String, Value)])
    }

    /// A received message (a reply or a signal), read in order.
    final class Message {
        fileprivate let message: OpaquePointer

        fileprivate init(retaining message: OpaquePointer) {
            self.message = sd_bus_message_ref(message)
        }

        deinit { sd_bus_message_unref(message) }

        /// The next argument, a string or object path.
        func readString(_ type: Character = "s") throws(SourceError) -> String {
            var value: UnsafePointer<CChar>?
            let r = sd_bus_message_read_basic(message, CChar(type.asciiValue!), &value)
            guard r > 0, let value else { throw .screenCast("a D-Bus reply held no \(type) where one was expected") }
            return String(cString: value)
        }

        /// The next argument, a uint32.
        func readUInt32() throws(SourceError) -> UInt32 {
            var value: UInt32 = 0
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &value) > 0 else {
                throw .screenCast("a D-Bus reply held no uint32 where one was expected")
            }
            return value
        }

        /// The next argument, a boolean.
        func readBool() throws(SourceError) -> Bool {
            var value: Int32 = 0
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "b")), &value) > 0 else {
                throw .screenCast("a D-Bus reply held no boolean where one was expected")
            }
            return value != 0
        }

        /// The next argument, a Unix file descriptor: a copy of it this process owns (the message closes its own).
        func readFileDescriptor() throws(SourceError) -> Int32 {
            var fd: Int32 = -1
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "h")), &fd) > 0, fd >= 0 else {
                throw .screenCast("a D-Bus reply held no file descriptor where one was expected")
            }
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw .screenCast("cannot keep the file descriptor a D-Bus reply held: \(String(cString: strerror(errno)))") }
            return copy
        }

        /// The next argument, an `a{sv}` of results: strings, object paths,
        /// uint32s, booleans and a portal's streams (`a(ua{sv})`: their node
        /// ids) are read; values of other types are skipped.
        func readResults() throws(SourceError) -> [String: Result] {
            var results: [String: Result] = [:]
            func check(_ r: Int32) throws(SourceError) -> Int32 {
                guard r >= 0 else { throw .screenCast("a D-Bus reply's results could not be read: \(String(cString: strerror(-r)))") }
                return r
            }
            func type(_ character: Character) -> CChar { CChar(character.asciiValue!) }
            _ = try check(sd_bus_message_enter_container(message, type("a"), "{sv}"))
            while try check(sd_bus_message_enter_container(message, type("e"), "sv")) > 0 {
                let key = try readString()
                var contents: UnsafePointer<CChar>?
                _ = try check(sd_bus_message_peek_type(message, nil, &contents))
                let signature = contents.map { String(cString: $0) } ?? ""
                _ = try check(sd_bus_message_enter_container(message, type("v"), signature))
                switch signature {
                case "s", "o": results[key] = .string(try readString(Character(signature)))
                case "u": results[key] = .uint32(try readUInt32())
                case "b":
                    var flag: Int32 = 0
                    _ = try check(sd_bus_message_read_basic(message, type("b"), &flag))
                    results[key] = .bool(flag != 0)
                case "a(ua{sv})":
                    var nodes: [UInt32] = []
                    _ = try check(sd_bus_message_enter_container(message, type("a"), "(ua{sv})"))
                    while try check(sd_bus_message_enter_container(message, type("r"), "ua{sv}")) > 0 {
                        nodes.append(try readUInt32())
                        _ = try check(sd_bus_message_skip(message, "a{sv}"))
                        _ = try check(sd_bus_message_exit_container(message))
                    }
                    _ = try check(sd_bus_message_exit_container(message))
                    results[key] = .streams(nodes)
                default:
                    _ = try check(sd_bus_message_skip(message, signature))
                }
                _ = try check(sd_bus_message_exit_container(message))
                _ = try check(sd_bus_message_exit_container(message))
            }
            _ = try check(sd_bus_message_exit_container(message))
            return results
        }
    }

    /// A value read from a reply's `a{sv}` results.
    enum Result: Equatable {
        case string(String)
        case uint32(UInt32)
        case bool(Bool)
        /// A portal's streams: their PipeWire node ids.
        case streams([UInt32])
    }

    private let bus: OpaquePointer
    /// Signals received for the matches added, oldest first: (path, member, message).
    private var received: [(path: String, member: String, message: Message)] = []
    private var slots: [OpaquePointer] = []
    /// The unique names of the well-known senders watched: a signal is kept
    /// only from them (the match's sender filters only signals sent to all:
    /// one addressed to this connection comes whatever its sender).
    private var trusted: Set<String> = []
    /// At most this many signals are kept unread (a client flooding us costs no memory).
    private static let keptAtMost = 64

    init() throws(SourceError) {
        var bus: OpaquePointer?
        let r = sd_bus_open_user(&bus)
        guard r >= 0, let bus else {
            // sd-bus says ENOMEDIUM ("No medium found") when this environment names no session bus at all.
            let why = r == -ENOMEDIUM ? "this environment names none" : String(cString: strerror(-r))
            throw .screenCast("cannot connect to the session D-Bus (\(why)): is DBUS_SESSION_BUS_ADDRESS set?")
        }
        self.bus = bus
    }

    /// This connection's unique name on the bus (":1.42").
    var uniqueName: String {
        var name: UnsafePointer<CChar>?
        return sd_bus_get_unique_name(bus, &name) >= 0 && name != nil ? String(cString: name!) : ""
    }

    deinit {
        for slot in slots { sd_bus_slot_unref(slot) }
        sd_bus_flush_close_unref(bus)
    }

    /// Calls `member` and waits up to `timeout` seconds for the reply.
    @discardableResult
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [Value] = [],
              timeout: Double = 5) throws(SourceError) -> Message {
        var message: OpaquePointer?
        var r = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard r >= 0, let message else { throw .screenCast("cannot make a D-Bus call to \(interface).\(member): \(String(cString: strerror(-r)))") }
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            r = Self.append(argument, to: message)
            guard r >= 0 else { throw .screenCast("cannot build the D-Bus call to \(interface).\(member): \(String(cString: strerror(-r)))") }
        }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        r = sd_bus_call(bus, message, UInt64(timeout * 1_000_000), &error, &reply)
        guard r >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? "", text = error.message.map { String(cString: $0) } ?? String(cString: strerror(-r))
            throw .dbus(name: name, call: "\(interface).\(member)", message: text)
        }
        defer { sd_bus_message_unref(reply) }
        return Message(retaining: reply)
    }

    private static func append(_ value: Value, to message: OpaquePointer) -> Int32 {
        func basic(_ type: Character, _ pointer: UnsafeRawPointer) -> Int32 { sd_bus_message_append_basic(message, CChar(type.asciiValue!), pointer) }
        switch value {
        case .string(let text): return text.withCString { basic("s", $0) }
        case .objectPath(let path): return path.withCString { basic("o", $0) }
        case .uint32(var number): return basic("u", &number)
        case .bool(let flag):
            var value: Int32 = flag ? 1 : 0
            return basic("b", &value)
        case .options(let options):
            var r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
            for (key, option) in options where r >= 0 {
                r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
                if r >= 0 { r = key.withCString { basic("s", $0) } }
                if r >= 0 { r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), option.signature) }
                if r >= 0 { r = append(option, to: message) }
                if r >= 0 { r = sd_bus_message_close_container(message) }
                if r >= 0 { r = sd_bus_message_close_container(message) }
            }
            return r >= 0 ? sd_bus_message_close_container(message) : r
        }
    }

    /// Whether a client of the bus owns `name` now.
    func hasOwner(_ name: String) -> Bool {
        (try? call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)]).readBool()) ?? false
    }

    /// Keeps the signals `member` of `interface` that `sender` (a bus name:
    /// the bus checks it, so no other client can speak for it) sent from
    /// `path`, for ``waitForSignal(path:member:timeout:)``.
    func watch(sender: String, path: String, interface: String, member: String) throws(SourceError) {
        trust(sender)
        var slot: OpaquePointer?
        let r = sd_bus_match_signal(bus, &slot, sender, path, interface, member, { message, context, _ in
            guard let message, let context else { return 0 }
            let bus = Unmanaged<SessionBus>.fromOpaque(context).takeUnretainedValue()
            guard let sender = sd_bus_message_get_sender(message).map({ String(cString: $0) }), bus.trusted.contains(sender) else { return 0 }
            if bus.received.count >= SessionBus.keptAtMost { bus.received.removeFirst() }
            let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
            let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
            bus.received.append((path, member, Message(retaining: message)))
            return 0
        }, Unmanaged.passUnretained(self).toOpaque())
        guard r >= 0, let slot else { throw .screenCast("cannot watch D-Bus signal \(interface).\(member): \(String(cString: strerror(-r)))") }
        slots.append(slot)
    }

    /// Takes signals from whoever owns `name` now (a service started on
    /// demand by a call owns it only after: call this again then; signals
    /// already queued are read only after it).
    func trust(_ name: String) {
        if let owner = try? call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(name)]).readString() {
            trusted.insert(owner)
        }
    }

    /// Handles what the bus has for us, waiting up to `timeout` seconds for something (0: none).
    func process(timeout: Double = 0) throws(SourceError) {
        var waited = false
        while true {
            let r = sd_bus_process(bus, nil)
            guard r >= 0 else { throw .screenCast("the session D-Bus connection failed: \(String(cString: strerror(-r)))") }
            if r > 0 { continue }
            if waited || timeout <= 0 { return }
            _ = sd_bus_wait(bus, UInt64(timeout * 1_000_000))
            waited = true
        }
    }

    /// The first signal `member` from `path` received (nil: none yet).
    func takeSignal(path: String, member: String) -> Message? {
        guard let index = received.firstIndex(where: { $0.path == path && $0.member == member }) else { return nil }
        return received.remove(at: index).message
    }

    /// Waits up to `timeout` seconds for signal `member` from `path`; a
    /// stop signal (Ctrl-C) ends the wait at once (a chooser can wait minutes).
    func waitForSignal(path: String, member: String, timeout: Double) throws(SourceError) -> Message? {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            if let message = takeSignal(path: path, member: member) { return message }
            if Signals.stops.load(ordering: .relaxed) > 0 { throw .screenCast("stopped by a signal before the desktop started the cast") }
            let left = Double(Int64(bitPattern: deadline &- MonotonicClock.now())) / 1e9
            guard left > 0 else { return nil }
            try process(timeout: min(left, 0.25))
        }
    }
}

extension SessionBus.Value {
    /// Its D-Bus type signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .uint32: "u"
        case .bool: "b"
        case .options: "a{sv}"
        }
    }
}
