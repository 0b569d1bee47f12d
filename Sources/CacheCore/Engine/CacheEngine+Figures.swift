/// The figures the pools' read-only attributes show, gathered for metrics.
extension CacheEngine {
    /// Every pool's figures, in name order.
    public func poolFigures() -> [PoolFigures] {
        let limits = policies.withLock { $0.mapValues(\.maxSize) }
        return poolNames().map { id, name in
            let pools = [id]
            var figures = PoolFigures(
                pool: name, usageBytes: figure(.usage, pools: pools), limitBytes: limits[id] ?? 0,
                persistentBytes: figure(.persistentUsage, pools: pools), pendingBytes: figure(.pendingUsage, pools: pools),
                files: figure(.files, pools: pools), evictedFiles: figure(.evictedFiles, pools: pools),
                evictedBytes: figure(.evictedBytes, pools: pools), hits: figure(.hits, pools: pools),
                misses: figure(.misses, pools: pools), originRequests: figure(.originRequests, pools: pools),
                fetchedBytes: figure(.fetchedBytes, pools: pools), fetchErrors: figure(.fetchErrors, pools: pools),
                fetchTTFBMillisecondsTotal: figure(.fetchTTFBTotal, pools: pools),
                fetchTTFBCount: figure(.fetchTTFBCount, pools: pools))
            if let report = evictor.replacement.report(of: id) {
                figures.recentHitRatio = report.recentHitRatio
                figures.estimatedHitRatios = report.curve.map {
                    PoolFigures.EstimatedHitRatio(size: $0.sizeBytes > 0 ? $0.sizeBytes : $0.sizeFiles,
                                                  inFiles: $0.sizeBytes == 0, hitRatio: $0.hitRatio)
                }
            }
            return figures
        }.sorted { $0.pool < $1.pool }
    }
}
