import CacheModel
import Synchronization

/// Names an origin said it lacks, remembered for `negative_ttl` so repeated misses do not
/// ask it again. Bounded: expired names go whenever it grows past `limit`.
final class NegativeCache: Sendable {
    private struct Key: Hashable {
        let parent: EntryID
        let name: [UInt8]
    }

    private let misses = Mutex([Key: Int64]())
    private let limit = Tunables.negativeCacheNames

    func contains(parent: EntryID, name: [UInt8], at time: Timestamp) -> Bool {
        misses.withLock { misses in
            guard let until = misses[Key(parent: parent, name: name)] else { return false }
            return until > time.nanoseconds
        }
    }

    func remember(parent: EntryID, name: [UInt8], at time: Timestamp, forSeconds seconds: Int64) {
        misses.withLock { misses in
            if misses.count >= limit {
                misses = misses.filter { $0.value > time.nanoseconds }
                if misses.count >= limit { misses.removeAll() }
            }
            misses[Key(parent: parent, name: name)] = time.nanoseconds + seconds * 1_000_000_000
        }
    }

    /// A pool's origin changed: what the old one lacked says nothing about the new one.
    func removeAll() {
        misses.withLock { $0.removeAll() }
    }
}
