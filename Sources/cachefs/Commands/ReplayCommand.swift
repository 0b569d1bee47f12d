import ArgumentParser
import CacheCore
import CacheModel
import CachePolicy
import Foundation

/// `cachefs replay TRACE`: offline, the hit ratios each policy, `auto` and Belady's optimum
/// would have on a trace at several sizes, with the engine's own policy code.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Hit ratios of each eviction policy on a trace, beside the offline optimum.",
        discussion: """
            The trace is CSV, one request per line: KEY,SIZE[,OPERATION] (operation get, the default, \
            set or delete; a header line is skipped). A pool records its own with \
            `setfattr -n user.cache.trace -v 1 MOUNT/POOL` (STORE/traces/POOL.csv). Sizes are bytes \
            (25M, 1G) or a percentage of the trace's working set (5%); with --objects they count files. \
            Each row shows a policy's object and byte hit ratios, and its object hit ratio as a \
            fraction of Belady's (the best any cache of that size can do; with sizes that differ, \
            a strong approximation of it). Nothing is mounted or changed.
            Examples:
              cachefs replay trace.csv
              cachefs replay ~/.cache/cachefs-store/traces/thumbnails.csv --size 5M --size 20M
              cachefs replay trace.csv --objects --size 1000 --policy lru --policy s3fifo --json
            """)

    @Argument(help: "The trace file (CSV: KEY,SIZE[,OPERATION]).") var trace: String
    @Option(name: .customLong("size"), help: "A cache size: bytes, 25M, or 5% of the working set (repeatable; default 1%, 5%, 10%, 25%).")
    var sizes: [String] = []
    @Option(name: .customLong("policy"), help: "A policy to replay: lru, s3fifo, sieve, tinylfu (repeatable; default all).")
    var policies: [String] = []
    @Flag(help: "Sizes count files, not bytes (a pool limited by max_files).") var objects = false
    @Option(help: "Requests that fill the caches before counting starts: a number, or a percentage of the trace (50%).")
    var warmup: String = "0"
    @Flag(name: .customLong("no-auto"), help: "Leave out the auto row.") var noAuto = false
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        for policy in policies where PolicyKind(rawValue: policy) == nil {
            throw ValidationError("unknown policy \(policy): expected one of \(PolicyKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard Self.warmupRequests(warmup, of: 1) != nil else {
            throw ValidationError("bad warmup \(warmup): expected a number of requests or a percentage such as 50%")
        }
        for size in sizes where ReplaySize(size) == nil {
            throw ValidationError("bad size \(size): expected bytes, a size such as 25M, or a percentage such as 5%")
        }
    }

    func run() throws {
        let text: String
        do {
            text = try String(contentsOfFile: trace, encoding: .utf8)
        } catch {
            printError("cachefs: cannot read \(trace): \(error.localizedDescription)")
            throw ExitCode.failure
        }
        let requests: [TraceRequest]
        do {
            requests = try TraceReader.parse(Substring(text))
        } catch {
            printError("cachefs: \(trace): \(error)")
            throw ExitCode.failure
        }
        guard requests.contains(where: { $0.operation == .get }) else {
            printError("cachefs: \(trace): no requests to replay")
            throw ExitCode.failure
        }
        let workingSet = Self.workingSet(of: requests, inObjects: objects)
        let capacities = (sizes.isEmpty ? ["1%", "5%", "10%", "25%"] : sizes).compactMap(ReplaySize.init)
            .map { max(1, $0.capacity(workingSet: workingSet)) }
        let kinds = policies.isEmpty ? PolicyKind.allCases : policies.compactMap(PolicyKind.init)
        let report = ReplayReport(trace: requests, capacities: capacities, policies: kinds, includingAuto: !noAuto,
                                  countsObjects: objects,
                                  warmup: Self.warmupRequests(warmup, of: requests.count) ?? 0)
        if json {
            print(try ReplayOutput.json(report))
        } else {
            print(ReplayOutput.table(report))
        }
    }

    /// `--warmup`: a count, or a percentage of the trace's requests.
    static func warmupRequests(_ text: String, of total: Int) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let percent = Double(trimmed.dropLast()), (0...100).contains(percent) else { return nil }
            return Int(Double(total) * percent / 100)
        }
        guard let count = Int(trimmed), count >= 0 else { return nil }
        return count
    }

    static func workingSet(of requests: [TraceRequest], inObjects: Bool) -> Int64 {
        var sizes: [CacheKey: Int64] = [:]
        for request in requests where request.operation == .get && sizes[request.key] == nil {
            sizes[request.key] = request.size
        }
        return inObjects ? Int64(sizes.count) : sizes.values.reduce(0, +)
    }
}

/// A `--size`: an amount (bytes, or files with --objects) or a share of the working set.
struct ReplaySize {
    enum Amount {
        case absolute(Int64)
        case percent(Double)
    }

    let amount: Amount

    init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let percent = Double(trimmed.dropLast()), percent > 0 else { return nil }
            amount = .percent(percent)
        } else {
            guard let bytes = ValueParsing.byteSize(trimmed), bytes > 0 else { return nil }
            amount = .absolute(bytes)
        }
    }

    func capacity(workingSet: Int64) -> Int64 {
        switch amount {
        case .absolute(let value): return value
        case .percent(let percent): return Int64((Double(workingSet) * percent / 100).rounded())
        }
    }
}

/// How `cachefs replay` prints a report.
enum ReplayOutput {
    static func table(_ report: ReplayReport) -> String {
        var lines = ["\(report.requests) requests of \(report.distinctKeys) keys (\(Format.bytes(report.workingSetBytes)))"]
        let header = ["SIZE", "POLICY", "OBJECT HIT", "BYTE HIT", "OF BELADY", ""]
        var rows = [header]
        for (capacity, group) in grouped(report) {
            let belady = group.first { $0.policy == "belady" }?.figures.objectHitRatio ?? 0
            for row in group {
                rows.append([
                    report.countsObjects ? "\(capacity) files" : Format.bytes(capacity), row.policy,
                    String(format: "%.3f", row.figures.objectHitRatio), String(format: "%.3f", row.figures.byteHitRatio),
                    belady > 0 ? String(format: "%.2fx", row.figures.objectHitRatio / belady) : "-",
                    row.switches.isEmpty ? "" : "switched to " + row.switches.map {
                        "\($0.to.rawValue) at request \($0.afterRequests)"
                    }.joined(separator: ", "),
                ])
            }
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        return lines.joined(separator: "\n")
    }

    struct JSONReport: Encodable {
        struct Row: Encodable {
            var policy: String
            var size: Int64
            var requests: Int64
            var hits: Int64
            var objectHitRatio: Double
            var byteHitRatio: Double
            var ofBelady: Double?
            /// `auto`'s switches: "POLICY@REQUESTS".
            var switches: [String]?
            var nanosecondsPerRequest: Double

            enum CodingKeys: String, CodingKey {
                case policy, size, requests, hits, switches
                case nanosecondsPerRequest = "nanoseconds_per_request"
                case objectHitRatio = "object_hit_ratio", byteHitRatio = "byte_hit_ratio", ofBelady = "of_belady"
            }
        }

        var requests: Int
        var distinctKeys: Int
        var workingSetBytes: Int64
        var sizeUnit: String
        var rows: [Row]

        enum CodingKeys: String, CodingKey {
            case requests, rows
            case distinctKeys = "distinct_keys", workingSetBytes = "working_set_bytes", sizeUnit = "size_unit"
        }
    }

    static func json(_ report: ReplayReport) throws -> String {
        var rows: [JSONReport.Row] = []
        for (capacity, group) in grouped(report) {
            let belady = group.first { $0.policy == "belady" }?.figures.objectHitRatio ?? 0
            for row in group {
                rows.append(JSONReport.Row(
                    policy: row.policy, size: capacity, requests: row.figures.requests, hits: row.figures.hits,
                    objectHitRatio: row.figures.objectHitRatio, byteHitRatio: row.figures.byteHitRatio,
                    ofBelady: belady > 0 ? row.figures.objectHitRatio / belady : nil,
                    switches: row.policy == "auto" ? row.switches.map { "\($0.to.rawValue)@\($0.afterRequests)" } : nil,
                    nanosecondsPerRequest: row.nanosecondsPerRequest))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let value = JSONReport(requests: report.requests, distinctKeys: report.distinctKeys,
                               workingSetBytes: report.workingSetBytes,
                               sizeUnit: report.countsObjects ? "files" : "bytes", rows: rows)
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Rows by size, in the order the sizes were given.
    private static func grouped(_ report: ReplayReport) -> [(Int64, [ReplayReport.Row])] {
        var order: [Int64] = []
        var groups: [Int64: [ReplayReport.Row]] = [:]
        for row in report.rows {
            if groups[row.capacity] == nil { order.append(row.capacity) }
            groups[row.capacity, default: []].append(row)
        }
        return order.map { ($0, groups[$0] ?? []) }
    }
}
