import CacheModel
import CacheNames
import Synchronization

/// The one owner of the per-pool counters (``PoolCounters``): every count goes through a
/// method here, each a single short hold of its own lock (a leaf: no other lock is taken
/// inside it).
///
/// Hits and misses, the one definition every figure uses (the totals `user.cache.hits` and
/// `user.cache.misses`, the root's sums, `user.cache.hit_ratio`, `cachefs status`, the
/// Prometheus metrics; docs/pools-and-files.md says it for users):
/// - a **hit** is an open for reading (`O_RDONLY` or `O_RDWR`) of a file the pool holds,
///   cached or persistent; an open that starts or joins a fetch from the origin is not one,
///   nor the first open of a small file its lookup stored;
/// - a **miss** is a lookup of a name the pool does not have (absent, or expired and so
///   removed), which is also how a file fetched from the pool's origin is counted: once, by
///   the lookup that found it there. The lookup the kernel makes just before a create is
///   taken back: writing a file is not a miss.
///
/// The kernel answers repeated lookups of a name itself, but every open reaches the daemon,
/// so hits are counted at open; a failed lookup is never cached by the kernel. The ratio is
/// hits / (hits + misses) over the same requests, weighted by how recent they are
/// (``RecentHitRatio``); the byte hit ratio weighs each of them also by its bytes: a hit by
/// the file's size, a miss by the pool's average cached file (the name's own size is unknown).
final class CounterBook: Sendable {
    private struct Counts {
        var totals: PoolCounters
        /// Not saved: a window of the requests since the mount.
        var recent: [EntryID: RecentHitRatio] = [:]
    }

    private let counts: Mutex<Counts>

    init(_ initial: PoolCounters) {
        counts = Mutex(Counts(totals: initial))
    }

    var snapshot: PoolCounters { counts.withLock { $0.totals } }

    /// `user.cache.hit_ratio`: nil before the pool's first request since the mount.
    func recentHitRatio(of pool: EntryID) -> Double? {
        counts.withLock { $0.recent[pool]?.ratio }
    }

    /// `user.cache.byte_hit_ratio`: the same requests weighed by their bytes; nil before the
    /// pool's first request since the mount.
    func recentByteHitRatio(of pool: EntryID) -> Double? {
        counts.withLock { $0.recent[pool]?.byteRatio }
    }

    func countHit(pool: EntryID, bytes: Int64) {
        guard pool != 0 else { return }
        counts.withLock { counts in
            counts.totals.hits[pool, default: 0] += 1
            counts.recent[pool, default: RecentHitRatio()].record(hit: true, bytes: bytes)
        }
    }

    func countMiss(pool: EntryID, bytes: Int64) {
        guard pool != 0 else { return }
        counts.withLock { counts in
            counts.totals.misses[pool, default: 0] += 1
            counts.recent[pool, default: RecentHitRatio()].record(hit: false, bytes: bytes)
        }
    }

    /// The kernel looks a name up before it creates it: that lookup is part of writing the
    /// file, not a miss of the app's (whose own failed lookup, if any, still counts).
    func takeBackMissOfCreate(pool: EntryID, bytes: Int64) {
        guard pool != 0 else { return }
        counts.withLock { counts in
            if let misses = counts.totals.misses[pool], misses > 0 { counts.totals.misses[pool] = misses - 1 }
            counts.recent[pool]?.takeBackMiss(bytes: bytes)
        }
    }

    /// Files cachefs removed by itself (eviction, expiry, pressure, clear, refusal).
    func countRemoved(_ files: [EntryRecord]) {
        guard !files.isEmpty else { return }
        counts.withLock { counts in
            for file in files {
                counts.totals.evictedFiles[file.pool, default: 0] += 1
                counts.totals.evictedBytes[file.pool, default: 0] += file.size
            }
        }
    }

    func countOriginRequest(pool: EntryID) {
        counts.withLock { $0.totals.originRequests[pool, default: 0] += 1 }
    }

    func countFetchedBytes(_ count: Int64, pool: EntryID) {
        counts.withLock { $0.totals.fetchedBytes[pool, default: 0] += count }
    }

    func countFirstByte(after elapsed: Duration, pool: EntryID) {
        let (seconds, attoseconds) = elapsed.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        counts.withLock { counts in
            counts.totals.firstBytes[pool, default: 0] += 1
            counts.totals.firstByteMicroseconds[pool, default: 0] += microseconds
        }
    }

    func countFetchError(pool: EntryID) {
        counts.withLock { $0.totals.fetchErrors[pool, default: 0] += 1 }
    }

    func countRevalidation(pool: EntryID) {
        counts.withLock { $0.totals.revalidations[pool, default: 0] += 1 }
    }

    func countStaleServed(pool: EntryID) {
        counts.withLock { $0.totals.staleServed[pool, default: 0] += 1 }
    }

    func countNotAdmitted(pool: EntryID) {
        counts.withLock { $0.totals.notAdmitted[pool, default: 0] += 1 }
    }
}

extension CounterBook: NameCounters {}
