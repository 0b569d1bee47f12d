import Synchronization

/// Conditions a user must act on, kept for `cachefs status` (the root's `user.cache.warnings`)
/// besides the log line that reported them once. Each says what happened and what to do.
public final class StoreWarnings: Sendable {
    /// A store in trouble keeps its first reports, not an endless list.
    static let limit = 16

    private let warnings = Mutex<[String]>([])

    public init() {}

    func add(_ warning: String) {
        warnings.withLock { warnings in
            guard !warnings.contains(warning), warnings.count < Self.limit else { return }
            warnings.append(warning)
        }
    }

    public var all: [String] { warnings.withLock { $0 } }
}
