import Foundation
import CachePolicy

/// A pool's `user.cache.eviction`: one replacement policy, or `auto`, which runs the policy
/// that miniature simulations of the pool's own recent reads say would have hit most.
public enum EvictionChoice: Sendable, Equatable, Hashable {
    case fixed(PolicyKind)
    case auto

    /// Least recently read first: the default, as the mission asks (a read is an access).
    public static let lru = EvictionChoice.fixed(.lru)

    public init?(rawValue: String) {
        let trimmed = rawValue.trimmingCharacters(in: .whitespaces)
        if trimmed == "auto" {
            self = .auto
        } else if let kind = PolicyKind(rawValue: trimmed) {
            self = .fixed(kind)
        } else {
            return nil
        }
    }

    public var rawValue: String {
        switch self {
        case .fixed(let kind): return kind.rawValue
        case .auto: return "auto"
        }
    }

    public var fixedKind: PolicyKind? {
        if case .fixed(let kind) = self { return kind }
        return nil
    }

    /// The values `user.cache.eviction` accepts, for error messages and help.
    public static let accepted = PolicyKind.allCases.map(\.rawValue) + ["auto"]
}

/// Coded as its `user.cache.eviction` text (for an encrypted store's sealed policies).
extension EvictionChoice: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let choice = EvictionChoice(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "eviction \(text)"))
        }
        self = choice
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
