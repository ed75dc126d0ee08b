/// Screen sizes of real iPhones and iPads, in pixels, portrait.
public enum DevicePreset: String, CaseIterable, Sendable {
    case iphoneSE = "iphone-se"
    case iphone15 = "iphone-15"
    case iphone15ProMax = "iphone-15-pro-max"
    case ipad = "ipad"
    case ipadPro11 = "ipad-pro-11"
    case ipadPro13 = "ipad-pro-12.9"

    public var size: (width: Int, height: Int) {
        switch self {
        case .iphoneSE: (750, 1334)
        case .iphone15: (1179, 2556)
        case .iphone15ProMax: (1290, 2796)
        case .ipad: (1640, 2360)
        case .ipadPro11: (1668, 2388)
        case .ipadPro13: (2048, 2732)
        }
    }
}
