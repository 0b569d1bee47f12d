import CacheCore
import CacheMetrics
import Logging
import Prometheus

/// The daemon's metrics (`-o metrics_file=PATH`): one registry holding the request timings
/// the FUSE adapter records and the pools' figures, written to the file by its own thread.
struct DaemonMetrics {
    let requestFactory: PrometheusMetricsFactory
    let file: MetricsFileWriter

    init(path: String, interval: Double, engine: CacheEngine, logger: Logger) {
        let registry = PrometheusCollectorRegistry()
        requestFactory = .cachefsRequests(registry: registry)
        file = MetricsFileWriter(path: path, interval: interval, registry: registry, logger: logger) { [weak engine] in
            engine?.poolFigures() ?? []
        }
    }
}
