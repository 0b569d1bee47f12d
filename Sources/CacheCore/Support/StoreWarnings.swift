import CacheModel
import Synchronization

/// Conditions a user must act on, kept for `cachefs status` (the root's `user.cache.warnings`)
/// besides the log line that reported them once. Each says what happened and what to do.
public final class StoreWarnings: Sendable {
    private let warnings = Mutex<[String]>([])
    /// Conditions that hold now, by what they are about, each replaced when it is looked at
    /// again and gone once it no longer holds.
    private let conditions = Mutex<[String: String]>([:])

    public init() {}

    /// Sets (or, with nil, clears) the condition about `subject`; true when it is new or changed.
    @discardableResult
    func setCondition(_ subject: String, _ warning: String?) -> Bool {
        conditions.withLock { conditions in
            let changed = conditions[subject] != warning
            conditions[subject] = warning
            return changed
        }
    }

    func add(_ warning: String) {
        warnings.withLock { warnings in
            guard !warnings.contains(warning), warnings.count < Tunables.warningsKept else { return }
            warnings.append(warning)
        }
    }

    public var all: [String] {
        warnings.withLock { $0 } + conditions.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
    }
}
