import CacheCore
import CacheMetrics
import CacheModel
import Prometheus

/// `cachefs status --format prometheus`: the pools' attributes, as read through the mount,
/// in the Prometheus text format (the daemon's request timings are in its metrics file).
enum PrometheusStatus {
    static func render(_ pools: [StatusCommand.PoolStatus]) -> String {
        let registry = PrometheusCollectorRegistry()
        PoolMetrics.record(pools.map { pool in
            var figures = PoolFigures(pool: pool.name, usageBytes: pool.usage, limitBytes: pool.maxSize,
                        persistentBytes: pool.persistentUsage, pendingBytes: pool.pendingUsage, files: pool.files,
                        evictedFiles: pool.evictedFiles, evictedBytes: pool.evictedBytes, hits: pool.hits,
                        misses: pool.misses, originRequests: pool.originRequests, fetchedBytes: pool.fetchedBytes,
                        fetchErrors: pool.fetchErrors, fetchTTFBMillisecondsTotal: pool.fetchTTFBTotal,
                        fetchTTFBCount: pool.fetchTTFBCount)
            figures.revalidations = pool.revalidations
            figures.staleServed = pool.staleServed
            figures.notAdmitted = pool.notAdmitted
            figures.recentHitRatio = pool.hitRatio
            figures.recentByteHitRatio = pool.byteHitRatio
            figures.estimatedHitRatios = pool.whatIf
            figures.policyMemoryBytes = pool.policyMemoryBytes
            figures.simulationMemoryBytes = pool.simulationMemoryBytes
            figures.shared = PoolFigures.SharedTierFigures(
                hits: pool.sharedHits, misses: pool.sharedMisses, bytesRead: pool.sharedBytesRead,
                bytesWritten: pool.sharedBytesWritten, errors: pool.sharedErrors, dropped: pool.sharedDropped,
                queue: pool.sharedQueue)
            return figures
        }, in: registry)
        return registry.emitToString()
    }
}
