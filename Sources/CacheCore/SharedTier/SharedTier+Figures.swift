import CacheModel

extension SharedTier {
    /// The pool's `user.cache.shared_*` figures together, for the metrics file.
    func figures(ofPool pool: EntryID) -> PoolFigures.SharedTierFigures {
        let counts = counters.counts(of: pool)
        return PoolFigures.SharedTierFigures(
            hits: counts.hits, misses: counts.misses, bytesRead: counts.bytesRead, bytesWritten: counts.bytesWritten,
            errors: counts.errors, dropped: counts.dropped, queue: Int64(queue.waiting(inPool: pool)))
    }
}
