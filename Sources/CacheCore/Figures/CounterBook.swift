import Synchronization

/// The one owner of the per-pool counters (``PoolCounters``): every count goes through a
/// method here, each a single short hold of its own lock (a leaf: no other lock is taken
/// inside it). The kernel answers repeated lookups of a name itself, so a hit is counted
/// where every read reaches the daemon, at open; a miss is a lookup of a name the pool
/// does not have.
final class CounterBook: Sendable {
    private let counts: Mutex<PoolCounters>

    init(_ initial: PoolCounters) {
        counts = Mutex(initial)
    }

    var snapshot: PoolCounters { counts.withLock { $0 } }

    /// An open for reading of a file the pool holds.
    func countHit(pool: EntryID) {
        guard pool != 0 else { return }
        counts.withLock { $0.hits[pool, default: 0] += 1 }
    }

    func countMiss(pool: EntryID) {
        guard pool != 0 else { return }
        counts.withLock { $0.misses[pool, default: 0] += 1 }
    }

    /// The kernel looks a name up before it creates it: that lookup is part of writing the
    /// file, not a miss of the app's (whose own failed lookup, if any, still counts).
    func takeBackMissOfCreate(pool: EntryID) {
        guard pool != 0 else { return }
        counts.withLock { counts in
            if let misses = counts.misses[pool], misses > 0 { counts.misses[pool] = misses - 1 }
        }
    }

    /// Files cachefs removed by itself (eviction, expiry, pressure, clear, refusal).
    func countRemoved(_ files: [EntryRecord]) {
        guard !files.isEmpty else { return }
        counts.withLock { counts in
            for file in files {
                counts.evictedFiles[file.pool, default: 0] += 1
                counts.evictedBytes[file.pool, default: 0] += file.size
            }
        }
    }

    func countOriginRequest(pool: EntryID) {
        counts.withLock { $0.originRequests[pool, default: 0] += 1 }
    }

    func countFetchedBytes(_ count: Int64, pool: EntryID) {
        counts.withLock { $0.fetchedBytes[pool, default: 0] += count }
    }

    func countFirstByte(after elapsed: Duration, pool: EntryID) {
        let (seconds, attoseconds) = elapsed.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        counts.withLock { counts in
            counts.firstBytes[pool, default: 0] += 1
            counts.firstByteMicroseconds[pool, default: 0] += microseconds
        }
    }

    func countFetchError(pool: EntryID) {
        counts.withLock { $0.fetchErrors[pool, default: 0] += 1 }
    }
}
