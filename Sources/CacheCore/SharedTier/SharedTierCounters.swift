import CacheModel
import Synchronization

/// One pool's shared tier figures since the mount (`user.cache.shared_*`).
struct SharedTierCounts: Sendable, Equatable {
    var hits: Int64 = 0
    var misses: Int64 = 0
    var bytesRead: Int64 = 0
    var bytesWritten: Int64 = 0
    /// The tier down, slow, refusing (a wrong password), or a corrupt value.
    var errors: Int64 = 0
    /// Files not written because the queue was full.
    var dropped: Int64 = 0
}

/// Each pool's ``SharedTierCounts``: a leaf lock, held for one addition or one read.
final class SharedTierCounters: Sendable {
    private let counts = Mutex<[EntryID: SharedTierCounts]>([:])

    func count(_ pool: EntryID, _ change: (inout SharedTierCounts) -> Void) {
        counts.withLock { change(&$0[pool, default: SharedTierCounts()]) }
    }

    func counts(of pool: EntryID) -> SharedTierCounts {
        counts.withLock { $0[pool] ?? SharedTierCounts() }
    }
}
