/// The figures the pools' read-only attributes show, gathered for metrics.
extension CacheEngine {
    /// Every pool's figures, in name order.
    public func poolFigures() -> [PoolFigures] {
        let limits = policies.withLock { $0.mapValues(\.maxSize) }
        return poolNames().map { id, name in
            let pools = [id]
            return PoolFigures(
                pool: name, usageBytes: figure(.usage, pools: pools), limitBytes: limits[id] ?? 0,
                persistentBytes: figure(.persistentUsage, pools: pools), pendingBytes: figure(.pendingUsage, pools: pools),
                files: figure(.files, pools: pools), evictedFiles: figure(.evictedFiles, pools: pools),
                evictedBytes: figure(.evictedBytes, pools: pools), hits: figure(.hits, pools: pools),
                misses: figure(.misses, pools: pools), originRequests: figure(.originRequests, pools: pools),
                fetchedBytes: figure(.fetchedBytes, pools: pools), fetchErrors: figure(.fetchErrors, pools: pools),
                fetchTTFBMillisecondsTotal: figure(.fetchTTFBTotal, pools: pools),
                fetchTTFBCount: figure(.fetchTTFBCount, pools: pools))
        }.sorted { $0.pool < $1.pool }
    }
}
