import Synchronization

/// Access times gathered in memory and written to the index in batches, so a read never
/// writes to disk. Losing the last batch in a crash loses only a few seconds of recency.
final class AccessTracker: Sendable {
    private let pending = Mutex<[EntryID: Int64]>([:])

    func touch(_ id: EntryID, at time: Int64) {
        pending.withLock { $0[id] = time }
    }

    func pendingTime(_ id: EntryID) -> Int64? {
        pending.withLock { $0[id] }
    }

    /// Every pending time, left in place (a preview reads them without flushing).
    func snapshot() -> [EntryID: Int64] {
        pending.withLock { $0 }
    }

    func forget(_ id: EntryID) {
        pending.withLock { $0[id] = nil }
    }

    /// Takes every pending time; the caller writes them to the index.
    func drain() -> [EntryID: Int64] {
        pending.withLock { pending in
            let taken = pending
            pending.removeAll(keepingCapacity: true)
            return taken
        }
    }
}
