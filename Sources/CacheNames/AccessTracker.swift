import CacheModel
import Synchronization

/// Access times gathered in memory, so a read never writes to disk. They reach the index in
/// two steps: every couple of seconds the times not logged yet are appended to the index's
/// access log (one row, a few bytes a file), and at a fold every time gathered since the last
/// fold is written into the entries' rows (see ``Names/flushAccessTimes()``). Until its fold
/// a time stays here: it is the file's last access, newer than its row's.
package final class AccessTracker: Sendable {
    private struct Times {
        /// Every time gathered since the last fold.
        var unfolded: [EntryID: Int64] = [:]
        /// Those not appended to the access log yet.
        var unlogged: [EntryID: Int64] = [:]

        mutating func note(_ id: EntryID, at time: Int64) {
            unfolded[id] = time
            unlogged[id] = time
        }
    }

    private let times = Mutex(Times())

    package init() {}

    func touch(_ id: EntryID, at time: Int64) {
        times.withLock { $0.note(id, at: time) }
    }

    /// Files read together (one read of the kernel's close events), in one hold.
    func touch(_ reads: [(id: EntryID, time: Int64)]) {
        guard !reads.isEmpty else { return }
        times.withLock { times in
            for (id, time) in reads { times.note(id, at: time) }
        }
    }

    func pendingTime(_ id: EntryID) -> Int64? {
        times.withLock { $0.unfolded[id] }
    }

    /// How many files were read since the last fold.
    var unfoldedCount: Int { times.withLock { $0.unfolded.count } }

    /// Every pending time, left in place (a preview reads them without flushing).
    package func snapshot() -> [EntryID: Int64] {
        times.withLock { $0.unfolded }
    }

    package func forget(_ id: EntryID) {
        times.withLock { times in
            times.unfolded[id] = nil
            times.unlogged[id] = nil
        }
    }

    /// Lets go of times a fold has moved into the inodes and committed to their rows: each
    /// one only if no newer read replaced it meanwhile (that one waits for the next append
    /// and fold). Until then a folded file's time is read here, so it never looks older than
    /// it is mid-fold.
    func folded(_ moved: [(key: EntryID, value: Int64)]) {
        times.withLock { times in
            for (id, time) in moved {
                if times.unfolded[id] == time { times.unfolded[id] = nil }
                if times.unlogged[id] == time { times.unlogged[id] = nil }
            }
        }
    }

    /// Takes the times not appended to the access log yet; they stay pending until the fold.
    func takeUnlogged() -> [EntryID: Int64] {
        times.withLock { times in
            let taken = times.unlogged
            times.unlogged.removeAll(keepingCapacity: true)
            return taken
        }
    }
}
