import CacheCore
import CacheModel
import Foundation
import Logging
import Prometheus
import Synchronization

/// Rewrites a metrics file for node_exporter's textfile collector every `interval` seconds
/// and once more when stopped, from a thread of its own. Each write goes to a temporary file
/// in the same directory, then is renamed over the old one, so a reader never sees half.
public final class MetricsFileWriter: Sendable {
    private let path: String
    private let interval: Double
    private let registry: PrometheusCollectorRegistry
    private let figures: @Sendable () -> [PoolFigures]
    private let logger: Logger
    private let stopping = Mutex(false)
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `figures` is asked for the pools' figures before every write.
    public init(path: String, interval: Double, registry: PrometheusCollectorRegistry, logger: Logger,
                figures: @escaping @Sendable () -> [PoolFigures]) {
        self.path = path
        self.interval = interval
        self.registry = registry
        self.logger = logger
        self.figures = figures
    }

    public func start() {
        let thread = Thread { [self] in
            while true {
                writeOnce()
                _ = wakeup.wait(timeout: .now() + interval)
                if stopping.withLock({ $0 }) { break }
            }
            writeOnce()
            finished.signal()
        }
        thread.name = "cachefs-metrics"
        thread.start()
    }

    /// Writes the file a last time and waits for it.
    public func stop() {
        stopping.withLock { $0 = true }
        wakeup.signal()
        finished.wait()
    }

    /// Refreshes the pools' figures and replaces the file.
    public func writeOnce() {
        PoolMetrics.record(figures(), in: registry)
        let temporary = path + ".tmp.\(getpid())"
        do {
            try Data(registry.emitToBuffer()).write(to: URL(fileURLWithPath: temporary))
        } catch {
            unlink(temporary)
            logger.warning("could not write the metrics file \(temporary): \(error)")
            return
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            logger.warning("could not replace the metrics file \(path): \(reason)")
            return
        }
    }
}
