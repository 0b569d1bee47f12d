import CacheModel
import Synchronization

/// Recent misses of names of origin pools, for `admit_after`: how many a name had within
/// `admit_window` of its first. Memory only, at most `capacity` names; when more are, all
/// are forgotten (a name's next miss counts from one again: a file kept later, never one
/// kept that should not be).
final class MissCounts: Sendable {
    private struct Count {
        var misses: Int64
        var first: Int64
    }

    private let table = Mutex<[Int: Count]>([:])
    private let capacity: Int

    init(capacity: Int = Tunables.admissionNamesKept) {
        self.capacity = capacity
    }

    static func key(pool: EntryID, path: [[UInt8]]) -> Int {
        var hasher = Hasher()
        hasher.combine(pool)
        for component in path { hasher.combine(component) }
        return hasher.finalize()
    }

    /// Counts a miss of `key` at `time` (nanoseconds); returns its misses within `window`
    /// nanoseconds of the first one counted, this one included.
    func countMiss(_ key: Int, at time: Int64, window: Int64) -> Int64 {
        table.withLock { table in
            if var count = table[key], time - count.first < window {
                count.misses += 1
                table[key] = count
                return count.misses
            }
            if table.count >= capacity && table[key] == nil { table.removeAll(keepingCapacity: true) }
            table[key] = Count(misses: 1, first: time)
            return 1
        }
    }

    func forget(_ key: Int) {
        _ = table.withLock { $0.removeValue(forKey: key) }
    }
}
