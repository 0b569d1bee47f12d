import Prometheus

extension PrometheusMetricsFactory {
    /// A factory whose timers suit FUSE requests: most take microseconds, a few (fsync, a
    /// write that evicts) milliseconds, where swift-prometheus's default buckets start at 5 ms.
    public static func cachefsRequests(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
            .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5),
        ]
        return factory
    }
}
