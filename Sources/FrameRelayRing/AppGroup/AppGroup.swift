/// An App Group identifier, the key that producer and host share, as in
/// `group.com.example.app.ScreenSharingExtension`.
///
/// Valid names start with `group.`, continue with dot-separated labels of
/// ASCII letters, digits and `-`, and are at most ``maxLength`` bytes.
public struct AppGroup: Hashable, Sendable, CustomStringConvertible {
    /// The longest name accepted; the ring header stores it whole.
    public static let maxLength = 200
    /// The App Group both sides use when none is given, shaped like a call SDK's sample handler's.
    public static let defaultName = "group.com.example.app.ScreenSharingExtension"
    public static let `default` = try! AppGroup(defaultName)  // valid by construction: the name meets every rule init checks

    /// The full identifier.
    public let name: String

    /// Validates `name`, throwing an error that says what is wrong with it.
    public init(_ name: String) throws(AppGroupError) {
        let bytes = Array(name.utf8)
        guard name.hasPrefix("group.") else { throw .missingPrefix(name) }
        guard bytes.count <= Self.maxLength else { throw .tooLong(name, bytes.count) }
        let labels = name.dropFirst("group.".count).split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 1, !labels.contains(where: \.isEmpty) else { throw .emptyLabel(name) }
        for label in labels {
            for scalar in label.unicodeScalars {
                let ok = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-")
                guard ok else { throw .badCharacter(name, Character(scalar)) }
            }
            guard label.first != "-", label.last != "-" else { throw .badHyphen(name) }
        }
        self.name = name
    }

    /// The POSIX shared-memory name of this group's ring: `/fr-` and 16 hex
    /// digits of the name's FNV-1a hash, 20 characters, within Darwin's 31.
    public var sharedMemoryName: String {
        Self.sharedMemoryPrefix + hexHash
    }

    /// The prefix of every segment FrameRelay creates (the name in `/dev/shm`
    /// has no leading slash).
    public static let sharedMemoryPrefix = "/fr-"

    /// The name's 64-bit FNV-1a hash: the same on every platform and run.
    package var hash: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    var hexHash: String {
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    public var description: String { name }
}

/// Why a string is not a valid App Group name.
public enum AppGroupError: Error, CustomStringConvertible, Equatable {
    case missingPrefix(String)
    case tooLong(String, Int)
    case emptyLabel(String)
    case badCharacter(String, Character)
    case badHyphen(String)

    public var description: String {
        switch self {
        case .missingPrefix(let name):
            "invalid App Group \"\(name)\": must start with \"group.\" (for example group.com.example.app.ScreenSharingExtension)"
        case .tooLong(let name, let count):
            "invalid App Group \"\(name.prefix(40))…\": \(count) bytes, at most \(AppGroup.maxLength)"
        case .emptyLabel(let name):
            "invalid App Group \"\(name)\": empty label between dots"
        case .badCharacter(let name, let character):
            "invalid App Group \"\(name)\": character \"\(character)\" is not allowed (letters, digits, '-' and '.' only)"
        case .badHyphen(let name):
            "invalid App Group \"\(name)\": a label may not start or end with '-'"
        }
    }
}
