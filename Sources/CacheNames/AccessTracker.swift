import CacheModel
import Synchronization

/// Access times gathered in memory and written to the index in batches, so a read never
/// writes to disk. Losing the last batch in a crash loses only a few seconds of recency.
package final class AccessTracker: Sendable {
    private let pending = Mutex<[EntryID: Int64]>([:])

    package init() {}

    func touch(_ id: EntryID, at time: Int64) {
        pending.withLock { $0[id] = time }
    }

    func pendingTime(_ id: EntryID) -> Int64? {
        pending.withLock { $0[id] }
    }

    /// Every pending time, left in place (a preview reads them without flushing).
    package func snapshot() -> [EntryID: Int64] {
        pending.withLock { $0 }
    }

    package func forget(_ id: EntryID) {
        pending.withLock { $0[id] = nil }
    }

    /// Takes every pending time; the caller writes them to the index.
    package func drain() -> [EntryID: Int64] {
        pending.withLock { pending in
            let taken = pending
            pending.removeAll(keepingCapacity: true)
            return taken
        }
    }
}
