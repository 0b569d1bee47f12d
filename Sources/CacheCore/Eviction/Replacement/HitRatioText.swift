import Foundation

/// A hit ratio as attributes, events and logs show it: three decimals.
enum HitRatioText {
    static func format(_ ratio: Double) -> String {
        String(format: "%.3f", ratio)
    }
}
