/// Whether an entry is pinned: never, until a moment (a lease), or until unpinned.
public enum PinState: Sendable, Equatable {
    case unpinned
    case forever
    case until(Timestamp)

    /// The index stores a pin as one integer: 0 none, -1 forever, else the end in nanoseconds.
    public init(storedValue: Int64) {
        switch storedValue {
        case 0: self = .unpinned
        case ..<0: self = .forever
        default: self = .until(Timestamp(nanoseconds: storedValue))
        }
    }

    public var storedValue: Int64 {
        switch self {
        case .unpinned: return 0
        case .forever: return -1
        case .until(let end): return max(end.nanoseconds, 1)
        }
    }

    public func isActive(at now: Timestamp) -> Bool {
        switch self {
        case .unpinned: return false
        case .forever: return true
        case .until(let end): return now < end
        }
    }

    /// Parses a `user.cache.pinned` value: `0`, `1`, a duration from now, or an RFC 3339 time.
    public static func parse(_ text: String, now: Timestamp) -> PinState? {
        if let flag = ValueParsing.flag(text) { return flag ? .forever : .unpinned }
        if let seconds = ValueParsing.durationSeconds(text) {
            return .until(Timestamp(nanoseconds: now.nanoseconds + seconds * 1_000_000_000))
        }
        if let end = ValueParsing.rfc3339(text) { return .until(end) }
        return nil
    }
}
