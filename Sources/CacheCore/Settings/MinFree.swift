import CacheModel
import Foundation

/// The free space the store keeps on its filesystem: a size, or a percentage of the disk.
public enum MinFree: Sendable, Equatable, CustomStringConvertible {
    case bytes(Int64)
    case percent(Int64)

    public static let settingKey = "min_free"
    /// Tests that are not about pressure set 0, so a nearly full disk cannot make them flaky.
    public static let defaultValue = MinFree.percent(Tunables.minFreePercent)

    public static func parse(_ text: String) -> MinFree? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let value = Int64(trimmed.dropLast()), (0...100).contains(value) else { return nil }
            return .percent(value)
        }
        return ValueParsing.byteSize(trimmed).flatMap { $0 >= 0 ? .bytes($0) : nil }
    }

    public var description: String {
        switch self {
        case .bytes(let value): return String(value)
        case .percent(let value): return "\(value)%"
        }
    }

    /// The bytes to keep free on a filesystem of `totalBytes`.
    public func bytes(ofTotal totalBytes: Int64) -> Int64 {
        switch self {
        case .bytes(let value): return value
        case .percent(let value): return totalBytes / 100 * value
        }
    }
}
