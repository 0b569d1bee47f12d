/// Hits and misses: the hit ratio an app expects. The kernel answers repeated lookups of a
/// name itself, so a hit is counted where every read reaches the daemon, at open; a miss is
/// a lookup of a name the pool does not have (counted in `lookup`).
extension CacheEngine {
    /// An open for reading of a file the pool holds.
    func countHit(pool: EntryID) {
        guard pool != 0 else { return }
        counters.withLock { $0.hits[pool, default: 0] += 1 }
    }

    /// The kernel looks a name up before it creates it: that lookup is part of writing the
    /// file, not a miss of the app's (whose own failed lookup, if any, still counts).
    func takeBackMissOfCreate(pool: EntryID) {
        guard pool != 0 else { return }
        counters.withLock { counters in
            if let misses = counters.misses[pool], misses > 0 { counters.misses[pool] = misses - 1 }
        }
    }
}
