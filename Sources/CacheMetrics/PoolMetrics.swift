import CacheCore
import CacheModel
import Prometheus

/// The per-pool figures as Prometheus metrics, labelled `pool`. The same code serves the
/// daemon's metrics file and `cachefs status --format prometheus`.
public enum PoolMetrics {
    /// Sets every pool's gauges and counters in `registry` to `figures`. Counters are the
    /// daemon's own totals (kept across restarts), so each is reset to the figure, not added to.
    public static func record(_ figures: [PoolFigures], in registry: PrometheusCollectorRegistry) {
        for pool in figures {
            let labels = [("pool", pool.pool)]
            for (descriptor, value) in gauges(pool) {
                registry.makeGauge(descriptor: descriptor, labels: labels).set(to: Double(value))
            }
            if let ratio = pool.recentHitRatio {
                registry.makeGauge(descriptor: descriptor(
                    "hit_ratio", unit: "", "Hits / (hits + misses) over the pool's recent requests, since the mount."),
                    labels: labels).set(to: ratio)
            }
            if let ratio = pool.recentByteHitRatio {
                registry.makeGauge(descriptor: descriptor(
                    "byte_hit_ratio", unit: "",
                    "The hit ratio's requests weighed by their bytes (a miss by the pool's average file), since the mount."),
                    labels: labels).set(to: ratio)
            }
            // One metric per kind of size, so each keeps one set of label names.
            for point in pool.estimatedHitRatios {
                let name = point.inFiles ? "estimated_hit_ratio_by_files" : "estimated_hit_ratio"
                let label = point.inFiles ? "size_files" : "size_bytes"
                registry.makeGauge(descriptor: descriptor(
                    name, unit: "", "Hit ratio the pool's policy would have at another size, from its sampled requests."),
                    labels: labels + [(label, String(point.size))]).set(to: point.hitRatio)
            }
            for (descriptor, value) in counters(pool) {
                let counter = registry.makeCounter(descriptor: descriptor, labels: labels)
                counter.reset()
                counter.increment(by: max(value, 0))
            }
            // Time to first byte as a summary's sum and count: rate(sum) / rate(count) is the
            // average over any window.
            let ttfbSum = registry.makeCounter(descriptor: descriptor(
                "fetch_ttfb", unit: "seconds_sum", "Sum of the times to first byte of fetches from the origin."), labels: labels)
            ttfbSum.reset()
            ttfbSum.increment(by: Double(max(pool.fetchTTFBMillisecondsTotal, 0)) / 1000)
            let ttfbCount = registry.makeCounter(descriptor: descriptor(
                "fetch_ttfb", unit: "seconds_count", "Fetches from the origin that stored a first byte."), labels: labels)
            ttfbCount.reset()
            ttfbCount.increment(by: max(pool.fetchTTFBCount, 0))
        }
    }

    private static func gauges(_ pool: PoolFigures) -> [(MetricNameDescriptor, Int64)] {
        [
            (descriptor("usage", unit: "bytes", "Bytes of cached files counted against max_size."), pool.usageBytes),
            (descriptor("limit", unit: "bytes", "The pool's max_size; 0 is unlimited."), pool.limitBytes),
            (descriptor("persistent", unit: "bytes", "Bytes of persistent files (not counted)."), pool.persistentBytes),
            (descriptor("pending", unit: "bytes", "Bytes of removed files still open."), pool.pendingBytes),
            (descriptor("files", unit: "", "Files the pool holds, cached and persistent."), pool.files),
            (descriptor("policy_memory", unit: "bytes",
                        "Bytes the pool's in-memory eviction policy holds (0 for lru, whose order is the index's)."),
             pool.policyMemoryBytes),
            (descriptor("simulation_memory", unit: "bytes",
                        "Bytes the pool's miniature simulations (auto's choice, the what-if curve) hold."),
             pool.simulationMemoryBytes),
            (descriptor("shared_queue", unit: "", "Files queued for the pool's shared tier or being written to it."),
             pool.shared.queue),
        ]
    }

    private static func counters(_ pool: PoolFigures) -> [(MetricNameDescriptor, Int64)] {
        [
            (descriptor("evicted_files", unit: "total", "Files cachefs removed by itself."), pool.evictedFiles),
            (descriptor("evicted_bytes", unit: "total", "Bytes cachefs removed by itself."), pool.evictedBytes),
            (descriptor("hits", unit: "total", "Opens for reading of files the pool holds."), pool.hits),
            (descriptor("misses", unit: "total", "Lookups of names the pool does not have (a fetched file's one; not a create's)."), pool.misses),
            (descriptor("origin_requests", unit: "total", "Fetches from the pool's origin started."),
             pool.originRequests),
            (descriptor("fetched_bytes", unit: "total", "Bytes stored from the pool's origin."), pool.fetchedBytes),
            (descriptor("fetch_errors", unit: "total", "Fetches from the pool's origin that failed."),
             pool.fetchErrors),
            (descriptor("revalidations", unit: "total",
                        "Fetched files whose origin was asked whether they changed (revalidate)."),
             pool.revalidations),
            (descriptor("stale_served", unit: "total",
                        "Opens served a stale copy because the origin could not be asked (stale_if_error)."),
             pool.staleServed),
            (descriptor("not_admitted", unit: "total",
                        "Files fetched from the pool's origin for their readers and not kept (admit_*)."),
             pool.notAdmitted),
        ] + sharedTierCounters(pool.shared)
    }

    /// Always there, 0 for a pool without a shared tier (as the origin's are for a pool
    /// without an origin): a series that appears when a tier is set would start mid-run.
    private static func sharedTierCounters(_ shared: PoolFigures.SharedTierFigures) -> [(MetricNameDescriptor, Int64)] {
        [
            (descriptor("shared_hits", unit: "total", "Lookups the pool's shared tier answered with a whole file."),
             shared.hits),
            (descriptor("shared_misses", unit: "total", "Lookups the pool's shared tier did not have."), shared.misses),
            (descriptor("shared_read_bytes", unit: "total", "Bytes of files read from the pool's shared tier."),
             shared.bytesRead),
            (descriptor("shared_written_bytes", unit: "total", "Bytes of files written to the pool's shared tier."),
             shared.bytesWritten),
            (descriptor("shared_errors", unit: "total",
                        "Failures of the pool's shared tier (down, slow, refused, a certificate that does not verify, a corrupt value)."),
             shared.errors),
            (descriptor("shared_dropped", unit: "total", "Files not written to the pool's shared tier: its queue was full."),
             shared.dropped),
        ]
    }

    private static func descriptor(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cachefs", subsystem: "pool", metricName: name, unitName: unit, helpText: help)
    }
}
