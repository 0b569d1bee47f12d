import ArgumentParser
import CacheCore
import CacheModel
import Foundation

/// `cachefs status MOUNT`: usage against limits, per pool.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show each pool's usage against its limits.",
        discussion: """
            Examples:
              cachefs status ~/cache
              cachefs status ~/cache --json | jq '.pools[] | select(.usage > .max_size)'
              cachefs status ~/cache --format prometheus
              cachefs status ~/cache --what-if
            On a terminal the table shows each pool's usage against its limit as a bar. --what-if
            adds, per pool, the hit ratio its policy would have at 1/8x to 8x of its limit,
            estimated from a sample of its own recent reads.
            """)

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case table, json, prometheus
    }

    @Argument(help: "The mount, or any path inside it.") var mount: String
    @Flag(help: "Print JSON (numbers in bytes and seconds); same as --format json.") var json = false
    @Option(help: "table, json or prometheus (the text format, per pool).") var format: OutputFormat = .table
    @Flag(name: .customLong("what-if"),
          help: "Also chart each pool's estimated hit ratio at other sizes (JSON always has the numbers).")
    var whatIf = false

    struct PoolStatus: Codable {
        var name: String
        var usage: Int64
        var maxSize: Int64
        var minSize: Int64
        var files: Int64
        var maxFiles: Int64
        var persistentUsage: Int64
        var pendingUsage: Int64
        var pinnedFiles: Int64
        var maxAge: Int64
        var ageBasis: String
        var evictedFiles: Int64
        var evictedBytes: Int64
        var hits: Int64
        var misses: Int64
        var originRequests: Int64
        var fetchedBytes: Int64
        var fetchErrors: Int64
        var fetchTTFB: Int64
        var fetchTTFBTotal: Int64
        var fetchTTFBCount: Int64
        var revalidations: Int64
        var staleServed: Int64
        var notAdmitted: Int64
        var oldestAccess: String
        var eviction: String
        var evictionActive: String
        var goal: String
        /// Nil before the pool's first request.
        var hitRatio: Double?
        var byteHitRatio: Double?
        /// Bytes the running policy holds in memory (0 for `lru`), and the simulations.
        var policyMemoryBytes: Int64
        var simulationMemoryBytes: Int64
        var whatIf: [PoolFigures.EstimatedHitRatio]
        /// The pool's shared tier (`user.cache.shared`, empty for none) and its figures since
        /// the mount, 0 without one.
        var shared: String
        var sharedHits: Int64
        var sharedMisses: Int64
        var sharedBytesRead: Int64
        var sharedBytesWritten: Int64
        var sharedErrors: Int64
        var sharedDropped: Int64
        var sharedQueue: Int64

        enum CodingKeys: String, CodingKey {
            case name, usage, files, hits, misses, eviction, goal
            case evictionActive = "eviction_active", hitRatio = "hit_ratio", whatIf = "what_if", byteHitRatio = "byte_hit_ratio"
            case maxSize = "max_size", minSize = "min_size", maxFiles = "max_files", persistentUsage = "persistent_usage"
            case pendingUsage = "pending_usage", pinnedFiles = "pinned_files", maxAge = "max_age"
            case ageBasis = "age_basis", evictedFiles = "evicted_files", evictedBytes = "evicted_bytes"
            case oldestAccess = "oldest_access", originRequests = "origin_requests", fetchedBytes = "fetched_bytes"
            case fetchErrors = "fetch_errors", fetchTTFB = "fetch_ttfb_ms", fetchTTFBTotal = "fetch_ttfb_ms_total"
            case fetchTTFBCount = "fetch_ttfb_count", policyMemoryBytes = "policy_memory_bytes"
            case simulationMemoryBytes = "simulation_memory_bytes"
            case revalidations, staleServed = "stale_served", notAdmitted = "not_admitted"
            case shared, sharedHits = "shared_hits", sharedMisses = "shared_misses", sharedBytesRead = "shared_bytes_read"
            case sharedBytesWritten = "shared_bytes_written", sharedErrors = "shared_errors"
            case sharedDropped = "shared_dropped", sharedQueue = "shared_queue"
        }
    }

    struct Report: Codable {
        var mount: String
        var store: String
        var minFree: String
        var pools: [PoolStatus]
        /// What the daemon says a user must act on.
        var warnings: [String]
        /// Entries the daemon holds in memory, and how many it keeps before idle directories leave.
        var loadedEntries: Int64
        var loadedEntriesBudget: Int64
        /// What the memory budget counts for those entries (long names and extras included), and the budget.
        var loadedBytes: Int64
        var loadedBytesBudget: Int64

        enum CodingKeys: String, CodingKey {
            case mount, store, pools, warnings
            case minFree = "min_free", loadedEntries = "loaded_entries", loadedEntriesBudget = "loaded_entries_budget"
            case loadedBytes = "loaded_bytes", loadedBytesBudget = "loaded_bytes_budget"
        }
    }

    func run() throws {
        try reportingFailures {
            let mount = try Xattr.mountRoot(containing: self.mount)
            let report = Report(
                mount: mount, store: try Xattr.get(mount, "user.cache.store"),
                minFree: try Xattr.get(mount, "user.cache.min_free"),
                pools: try poolDirectories(of: mount).map { try poolStatus(mount + "/" + $0, name: $0) },
                warnings: try Xattr.get(mount, "user.cache.warnings").split(separator: "\n").map(String.init),
                loadedEntries: Int64(try Xattr.get(mount, "user.cache.loaded_entries")) ?? 0,
                loadedEntriesBudget: Int64(try Xattr.get(mount, "user.cache.loaded_entries_budget")) ?? 0,
                loadedBytes: Int64(try Xattr.get(mount, "user.cache.loaded_bytes")) ?? 0,
                loadedBytesBudget: Int64(try Xattr.get(mount, "user.cache.loaded_bytes_budget")) ?? 0)
            if format == .prometheus {
                print(PrometheusStatus.render(report.pools), terminator: "")
            } else if json || format == .json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                printTable(report)
            }
        }
    }

    private func poolStatus(_ path: String, name: String) throws -> PoolStatus {
        func number(_ key: String) throws -> Int64 { Int64(try Xattr.get(path, "user.cache." + key)) ?? 0 }
        return PoolStatus(
            name: name, usage: try number("usage"), maxSize: try number("max_size"), minSize: try number("min_size"),
            files: try number("files"),
            maxFiles: try number("max_files"), persistentUsage: try number("persistent_usage"),
            pendingUsage: try number("pending_usage"), pinnedFiles: try number("pinned_files"),
            maxAge: try number("max_age"), ageBasis: try Xattr.get(path, "user.cache.age_basis"),
            evictedFiles: try number("evicted_files"), evictedBytes: try number("evicted_bytes"),
            hits: try number("hits"), misses: try number("misses"), originRequests: try number("origin_requests"),
            fetchedBytes: try number("fetched_bytes"), fetchErrors: try number("fetch_errors"),
            fetchTTFB: try number("fetch_ttfb_ms"), fetchTTFBTotal: try number("fetch_ttfb_ms_total"),
            fetchTTFBCount: try number("fetch_ttfb_count"),
            revalidations: try number("revalidations"), staleServed: try number("stale_served"),
            notAdmitted: try number("not_admitted"),
            oldestAccess: try Xattr.get(path, "user.cache.oldest_access"),
            eviction: try Xattr.get(path, "user.cache.eviction"),
            evictionActive: try Xattr.get(path, "user.cache.eviction_active"),
            goal: try Xattr.get(path, "user.cache.goal"),
            hitRatio: Double(try Xattr.get(path, "user.cache.hit_ratio")),
            byteHitRatio: Double(try Xattr.get(path, "user.cache.byte_hit_ratio")),
            policyMemoryBytes: try number("policy_memory_bytes"),
            simulationMemoryBytes: try number("simulation_memory_bytes"),
            whatIf: PoolFigures.EstimatedHitRatio.parseCurve(try Xattr.get(path, "user.cache.hit_ratio_curve")),
            shared: try Xattr.get(path, "user.cache.shared"),
            sharedHits: try number("shared_hits"), sharedMisses: try number("shared_misses"),
            sharedBytesRead: try number("shared_bytes_read"), sharedBytesWritten: try number("shared_bytes_written"),
            sharedErrors: try number("shared_errors"), sharedDropped: try number("shared_dropped"),
            sharedQueue: try number("shared_queue"))
    }

    /// `auto (s3fifo)` for an auto pool, the policy's name otherwise.
    private static func policyName(_ pool: PoolStatus) -> String {
        pool.eviction == "auto" ? "auto (\(pool.evictionActive))" : pool.eviction
    }

    /// The bar is for eyes: a pipe gets the percentage alone.
    private func usageAgainstLimit(_ pool: PoolStatus) -> String {
        isatty(STDOUT_FILENO) == 1 ? Format.bar(pool.usage, of: pool.maxSize) : Format.percent(pool.usage, of: pool.maxSize)
    }

    private func printTable(_ report: Report) {
        print("store \(report.store), min_free \(report.minFree), loaded entries \(report.loadedEntries) "
            + "of \(report.loadedEntriesBudget) the memory budget allows, counted \(Format.bytes(report.loadedBytes)) "
            + "of \(Format.bytes(report.loadedBytesBudget))")
        for warning in report.warnings { print("warning: \(warning)") }
        let header = ["POOL", "USAGE", "", "LIMIT", "FILES", "PINNED", "PERSISTENT", "MAX AGE", "POLICY", "POLICY MEM",
                      "GOAL", "HIT RATIO", "BYTE HIT", "EVICTED", "OLDEST ACCESS"]
        var rows = [header]
        for pool in report.pools {
            rows.append([
                pool.name, Format.bytes(pool.usage), usageAgainstLimit(pool),
                pool.maxSize == 0 ? "unlimited" : Format.bytes(pool.maxSize),
                pool.maxFiles == 0 ? String(pool.files) : "\(pool.files)/\(pool.maxFiles)",
                String(pool.pinnedFiles), Format.bytes(pool.persistentUsage),
                pool.maxAge == 0 ? "never" : Format.duration(pool.maxAge) + (pool.ageBasis == "access" ? "" : " (mtime)"),
                Self.policyName(pool), Format.bytes(pool.policyMemoryBytes), pool.goal, pool.hitRatio.map { String(format: "%.3f", $0) } ?? "-",
                pool.byteHitRatio.map { String(format: "%.3f", $0) } ?? "-",
                String(pool.evictedFiles), pool.oldestAccess.isEmpty ? "-" : pool.oldestAccess,
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        // A line per pool that has a tier (seven more columns would not fit a terminal).
        for pool in report.pools where !pool.shared.isEmpty {
            print("\(pool.name): shared tier \(pool.shared): \(pool.sharedHits) hits, \(pool.sharedMisses) misses, "
                + "\(Format.bytes(pool.sharedBytesRead)) read, \(Format.bytes(pool.sharedBytesWritten)) written, "
                + "\(pool.sharedErrors) errors, \(pool.sharedDropped) dropped, \(pool.sharedQueue) queued")
        }
        if whatIf {
            for pool in report.pools { printWhatIf(pool) }
        }
    }

    /// The what-if chart: one bar per size, the pool's own limit marked.
    private func printWhatIf(_ pool: PoolStatus) {
        print("")
        print("\(pool.name): estimated hit ratio by size (\(Self.policyName(pool)))")
        guard !pool.whatIf.isEmpty else {
            print("  not enough requests yet (or no limit to compare with)")
            return
        }
        let limit = pool.maxSize > 0 ? pool.maxSize : pool.maxFiles
        let labels = pool.whatIf.map { $0.inFiles ? "\($0.size) files" : Format.bytes($0.size) }
        let width = labels.map(\.count).max() ?? 0
        for (point, label) in zip(pool.whatIf, labels) {
            let filled = Int((point.hitRatio * 40).rounded())
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 40 - filled)
            let mark = point.size == limit ? "  <- limit now" : ""
            print("  \(label.padding(toLength: width, withPad: " ", startingAt: 0))  [\(bar)] \(String(format: "%.3f", point.hitRatio))\(mark)")
        }
    }
}

enum Format {
    static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024 && unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : String(format: "%.1f %@", amount, units[unit])
    }

    static func bar(_ value: Int64, of limit: Int64, width: Int = 20) -> String {
        guard limit > 0 else { return "[" + String(repeating: " ", count: width) + "]" }
        let filled = min(width, Int((Double(value) / Double(limit) * Double(width)).rounded()))
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + percent(value, of: limit)
    }

    static func percent(_ value: Int64, of limit: Int64) -> String {
        guard limit > 0 else { return "" }
        return "\(Int((Double(value) / Double(limit) * 100).rounded()))%"
    }

    static func duration(_ seconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86400)), ("h", 3600), ("m", 60)] where seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}
