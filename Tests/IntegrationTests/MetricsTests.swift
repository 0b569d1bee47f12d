import Foundation
import Glibc
import Testing

/// Prometheus metrics: `cachefs status --format prometheus` and the daemon's metrics file,
/// parsed and checked against the pools' attributes as getfattr reads them.
@Suite struct MetricsTests {
    /// Metric name → attribute of the pool directory it must equal.
    static let poolFigures = [
        "cachefs_pool_usage_bytes": "usage", "cachefs_pool_limit_bytes": "max_size",
        "cachefs_pool_persistent_bytes": "persistent_usage", "cachefs_pool_pending_bytes": "pending_usage",
        "cachefs_pool_files": "files", "cachefs_pool_evicted_files_total": "evicted_files",
        "cachefs_pool_evicted_bytes_total": "evicted_bytes", "cachefs_pool_hits_total": "hits",
        "cachefs_pool_misses_total": "misses", "cachefs_pool_origin_requests_total": "origin_requests",
        "cachefs_pool_fetched_bytes_total": "fetched_bytes", "cachefs_pool_fetch_errors_total": "fetch_errors",
        "cachefs_pool_fetch_ttfb_seconds_count": "fetch_ttfb_count",
        // The shared tier's, 0 for a pool without one (FiguresTests shows them counting).
        "cachefs_pool_shared_hits_total": "shared_hits", "cachefs_pool_shared_misses_total": "shared_misses",
        "cachefs_pool_shared_read_bytes_total": "shared_bytes_read",
        "cachefs_pool_shared_written_bytes_total": "shared_bytes_written",
        "cachefs_pool_shared_errors_total": "shared_errors", "cachefs_pool_shared_dropped_total": "shared_dropped",
        "cachefs_pool_shared_queue": "shared_queue",
    ]

    /// Metrics in seconds of attributes in milliseconds.
    static let poolFiguresInMilliseconds = ["cachefs_pool_fetch_ttfb_seconds_sum": "fetch_ttfb_ms_total"]

    /// Samples of the text format: `name{labels} value` → value. Every other line must be a
    /// `# HELP` or `# TYPE` comment.
    static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                Issue.record("not a sample: \(line)")
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    /// The figures the samples show that differ from the pools' attributes (empty if none).
    static func mismatches(_ samples: [String: Double], _ mount: MountedStore) throws -> [String] {
        var wrong: [String] = []
        for pool in ["data", "thumbnails", "avatars"] {
            for (metric, attribute) in poolFigures {
                let expected = try mount.xattr(pool, "user.cache." + attribute)
                let shown = samples[metric + "{pool=\"\(pool)\"}"]
                if shown.map({ String(Int64($0)) }) != expected { wrong.append("\(metric) \(pool): \(shown as Any) != \(expected)") }
            }
            for (metric, attribute) in poolFiguresInMilliseconds {
                let expected = try mount.xattr(pool, "user.cache." + attribute)
                let shown = samples[metric + "{pool=\"\(pool)\"}"]
                if shown.map({ String(Int64(($0 * 1000).rounded())) }) != expected {
                    wrong.append("\(metric) \(pool): \(shown as Any) s != \(expected) ms")
                }
            }
        }
        return wrong
    }

    /// Files, a read, a miss, an eviction and a persistent file, so no figure is only zero.
    static func exercise(_ mount: MountedStore) throws {
        _ = try mount.mustSucceed("""
            setfattr -n user.cache.max_size -v 300000 data
            for i in 1 2 3 4; do head -c 100000 /dev/zero > data/f$i; done
            echo keep > data/kept; setfattr -n user.cache.persistent -v 1 data/kept
            cat data/f4 > /dev/null; cat data/nothing 2>/dev/null; echo t > thumbnails/t
            """)
        #expect(try Shell.waitUntil(seconds: 5) { try mount.xattr("data", "user.cache.evicted_files") != "0" })
    }

    @Test func statusPrintsThePoolsFiguresInTheTextFormat() throws {
        try withMountedStore { mount in
            try Self.exercise(mount)
            let result = try Shell.run([MountedStore.executable, "status", mount.mountpoint, "--format", "prometheus"])
            #expect(result.succeeded, "\(result.error)")
            #expect(result.output.contains("# TYPE cachefs_pool_usage_bytes gauge"))
            #expect(result.output.contains("# TYPE cachefs_pool_hits_total counter"))
            let samples = Self.parse(result.output)
            #expect(samples["cachefs_pool_hits_total{pool=\"data\"}"] == 1)
            #expect(try Self.mismatches(samples, mount) == [])
        }
    }

    @Test func theDaemonRewritesItsMetricsFileWithPoolFiguresAndRequestTimings() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-metrics-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/cachefs.prom"
        try withMountedStore(arguments: ["-o", "metrics_file=\(file),metrics_interval=0.2"]) { mount in
            try Self.exercise(mount)
            var wrong: [String] = ["never read"]
            let agreed = Shell.waitUntil(seconds: 5) {
                guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return false }
                wrong = (try? Self.mismatches(Self.parse(text), mount)) ?? ["unreadable"]
                return wrong.isEmpty
            }
            #expect(agreed, "\(wrong)")
            let samples = Self.parse(try String(contentsOfFile: file, encoding: .utf8))
            for operation in ["lookup", "create", "open", "write", "read", "getxattr", "setxattr"] {
                let count = samples["cachefs_request_duration_seconds_count{op=\"\(operation)\"}"] ?? 0
                #expect(count > 0, "no \(operation) requests counted")
                #expect(samples["cachefs_request_duration_seconds_sum{op=\"\(operation)\"}"] != nil)
            }
            #expect(samples.keys.contains { $0.hasPrefix("cachefs_request_duration_seconds_bucket{op=\"lookup\",le=") })
            // The last write happens at unmount, after everything the mount did.
            _ = try mount.mustSucceed("echo late > data/late")
            #expect(try mount.unmount() == 0)
            // Only the file itself is left: each temporary file was renamed over it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["cachefs.prom"])
            let final = Self.parse(try String(contentsOfFile: file, encoding: .utf8))
            #expect(final["cachefs_pool_files{pool=\"data\"}"] == samples["cachefs_pool_files{pool=\"data\"}"].map { $0 + 1 })
        }
    }
}
