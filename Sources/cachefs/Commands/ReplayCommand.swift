import ArgumentParser
import CacheCore
import CacheModel
import CachePolicy
import Foundation

/// `cachefs replay TRACE`: offline, the hit ratios each policy and `auto` would have on a
/// trace at several sizes, with the engine's own policy code, beside the optimum (Belady's
/// MIN where it is exact, an upper bound elsewhere).
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Hit ratios of each eviction policy on a trace, beside the offline optimum.",
        discussion: """
            The trace is CSV, one request per line: KEY,SIZE[,OPERATION[,COST]] (operation get, the \
            default, set or delete; COST the milliseconds a miss of it costs, such as the time its \
            fetch took, 0 when left out; a header line is skipped). A pool records its own with \
            `setfattr -n user.cache.trace -v 1 MOUNT/POOL` (STORE/traces/POOL.csv). Sizes are bytes \
            (25M, 1G) or a percentage of the trace's working set (5%); with --objects they count files. \
            Each row shows a policy's object and byte hit ratios (with --goal cost, the share of the \
            cost its hits saved, and how much), and its measure of the goal as a fraction of the \
            reference's. The reference is Belady's MIN (`belady`) where it is the optimum: every \
            file takes the same room and the goal counts every hit alike. Elsewhere Belady's rule \
            is a heuristic an online policy can beat (`belady-heuristic`), and the reference is \
            `upper-bound`: no cache of that size beats it (the space-time relaxation of \
            Berger et al.'s PFOO-L), though none may reach it either. Nothing is mounted or changed.
            Examples:
              cachefs replay trace.csv
              cachefs replay ~/.cache/cachefs-store/traces/thumbnails.csv --size 5M --size 20M
              cachefs replay trace.csv --objects --size 1000 --policy lru --policy s3fifo --json
              cachefs replay fetches.csv --goal cost --size 10%
            """)

    @Argument(help: "The trace file (CSV: KEY,SIZE[,OPERATION[,COST]]).") var trace: String
    @Option(name: .customLong("size"), help: "A cache size: bytes, 25M, or 5% of the working set (repeatable; default 1%, 5%, 10%, 25%).")
    var sizes: [String] = []
    @Option(name: .customLong("policy"),
            help: "A policy to replay: lru, s3fifo, sieve, tinylfu, gdsf, gdsf-files (repeatable; default auto's candidates for the goal: gdsf-files under bytes only).")
    var policies: [String] = []
    @Option(help: "What a miss counts: files (the object hit ratio), bytes (the byte hit ratio) or cost (the COST column). Size- and cost-aware policies weigh files by it.")
    var goal: String = CacheGoal.files.rawValue
    @Flag(help: "Sizes count files, not bytes (a pool limited by max_files).") var objects = false
    @Option(help: "Requests that fill the caches before counting starts: a number, or a percentage of the trace (50%).")
    var warmup: String = "0"
    @Flag(name: .customLong("no-auto"), help: "Leave out the auto row.") var noAuto = false
    @Option(name: .customLong("admit-max-size"), help: "As the pool setting: larger files are served, not kept (bytes or 64M; 0 = no bound).")
    var admitMaxSize: String = "0"
    @Option(name: .customLong("admit-min-size"), help: "As the pool setting: smaller files are served, not kept.")
    var admitMinSize: String = "0"
    @Option(name: .customLong("admit-after"), help: "As the pool setting: a file is kept at its Nth miss (counted over the whole trace).")
    var admitAfter: Int64 = 1
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        for policy in policies where PolicyKind(rawValue: policy) == nil {
            throw ValidationError("unknown policy \(policy): expected one of \(PolicyKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard Self.warmupRequests(warmup, of: 1) != nil else {
            throw ValidationError("bad warmup \(warmup): expected a number of requests or a percentage such as 50%")
        }
        guard CacheGoal(rawValue: goal) != nil else {
            throw ValidationError("bad goal \(goal): expected one of \(CacheGoal.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        for (name, value) in [("admit-max-size", admitMaxSize), ("admit-min-size", admitMinSize)]
        where ValueParsing.byteSize(value) == nil {
            throw ValidationError("bad \(name) \(value): expected bytes or a size such as 64M")
        }
        guard (1...1000).contains(admitAfter) else {
            throw ValidationError("bad admit-after \(admitAfter): expected 1 to 1000")
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
        let goal = CacheGoal(rawValue: goal) ?? .files
        let kinds = policies.isEmpty ? PolicyKind.candidates(for: goal) : policies.compactMap(PolicyKind.init)
        let report = ReplayReport(trace: requests, capacities: capacities, policies: kinds, includingAuto: !noAuto,
                                  countsObjects: objects, goal: goal,
                                  warmup: Self.warmupRequests(warmup, of: requests.count) ?? 0,
                                  admission: AdmissionRule(maxSize: ValueParsing.byteSize(admitMaxSize) ?? 0,
                                                           minSize: ValueParsing.byteSize(admitMinSize) ?? 0,
                                                           after: admitAfter))
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
        var lines = ["\(report.requests) requests of \(report.distinctKeys) keys (\(Format.bytes(report.workingSetBytes))); goal: \(report.goal.rawValue)"]
        let showsCost = report.goal == .cost
        let ofReference = report.beladyIsExact ? "OF OPTIMUM" : "OF BOUND"
        let header = ["SIZE", "POLICY", "OBJECT HIT", "BYTE HIT"] + (showsCost ? ["COST SAVED", "SAVED"] : [])
            + [ofReference, ""]
        var rows = [header]
        for (capacity, group) in grouped(report) {
            let reference = referenceRatio(in: group, of: report)
            let requestedCost = group.first { $0.bound == nil }?.figures.requestedCost ?? 0
            for row in group {
                var cells = [report.countsObjects ? "\(capacity) files" : Format.bytes(capacity), row.policy,
                             String(format: "%.3f", row.objectHitRatio), String(format: "%.3f", row.byteHitRatio)]
                if showsCost {
                    cells += [String(format: "%.3f", row.costSavedRatio),
                              milliseconds(row.costSavedRatio * requestedCost)]
                }
                cells += [
                    reference > 0 ? String(format: "%.2fx", row.ratio(for: report.goal) / reference) : "-",
                    row.switches.isEmpty ? "" : "switched to " + zip(row.switches, row.recommendations).map {
                        "\($0.to.rawValue) at request \($0.afterRequests) (\(leadText($1)))"
                    }.joined(separator: ", "),
                ]
                rows.append(cells)
            }
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        if report.beladyIsExact {
            lines.append("belady: the optimum (Belady's MIN; every file takes the same room).")
        } else {
            lines.append("upper-bound: no cache of this size beats it (each measure bounded on its own; none may reach it).")
            lines.append("belady-heuristic: evicts the file read again farthest ahead; with sizes or costs that differ, not an optimum.")
        }
        return lines.joined(separator: "\n")
    }

    /// Why `auto` switched: the goal and the simulated measures of the two policies, as
    /// "files 0.790 against s3fifo's 0.640", or that it started from a size-aware policy.
    static func leadText(_ recommendation: PolicyRecommendation) -> String {
        if case .sizesVary(let spread) = recommendation.basis {
            return String(format: "file sizes vary: spread %.2f", spread)
        }
        let figure = { (kind: PolicyKind) in String(format: "%.3f", recommendation.ratios[kind] ?? 0) }
        return "\(recommendation.goal.rawValue) \(figure(recommendation.kind)) against "
            + "\(recommendation.from.rawValue)'s \(figure(recommendation.from))"
    }

    /// A cost in milliseconds, in the unit that reads best.
    static func milliseconds(_ value: Double) -> String {
        switch value {
        case ..<1_000: return String(format: "%.0f ms", value)
        case ..<60_000: return String(format: "%.1f s", value / 1_000)
        case ..<3_600_000: return String(format: "%.1f min", value / 60_000)
        default: return String(format: "%.1f h", value / 3_600_000)
        }
    }

    /// The goal's measure of the size's reference row (Belady or the upper bound).
    private static func referenceRatio(in group: [ReplayReport.Row], of report: ReplayReport) -> Double {
        group.first { $0.policy == report.referenceRow }?.ratio(for: report.goal) ?? 0
    }

    struct JSONReport: Encodable {
        struct Row: Encodable {
            var policy: String
            var size: Int64
            var requests: Int64
            /// Nil for the upper bound, whose hits are fractional (its ratios say it all).
            var hits: Int64?
            var objectHitRatio: Double
            var byteHitRatio: Double
            var costSavedRatio: Double
            /// The milliseconds of cost the hits saved.
            var costSaved: Double
            /// The goal's measure as a fraction of the reference row's.
            var ofReference: Double?
            /// `auto`'s switches: "POLICY@REQUESTS".
            var switches: [String]?
            /// Why `auto` switched, one per switch.
            var switchFigures: [SwitchFigures]?
            var nanosecondsPerRequest: Double

            enum CodingKeys: String, CodingKey {
                case policy, size, requests, hits, switches
                case switchFigures = "switch_figures"
                case nanosecondsPerRequest = "nanoseconds_per_request"
                case objectHitRatio = "object_hit_ratio", byteHitRatio = "byte_hit_ratio"
                case costSavedRatio = "cost_saved_ratio", costSaved = "cost_saved_ms", ofReference = "of_reference"
            }
        }

        /// What one switch of `auto` was decided on: the goal and every candidate's simulated
        /// measure of it.
        struct SwitchFigures: Encodable {
            var to: String
            var from: String
            var goal: String
            var simulated: [String: Double]
            /// Set when the switch was `auto`'s size-aware start: the sizes' log spread.
            var sizeSpread: Double?

            enum CodingKeys: String, CodingKey {
                case to, from, goal, simulated
                case sizeSpread = "size_spread"
            }
        }

        var requests: Int
        var distinctKeys: Int
        var workingSetBytes: Int64
        var sizeUnit: String
        var goal: String
        /// `belady` where Belady's MIN is exact, else `upper-bound`.
        var reference: String
        var rows: [Row]

        enum CodingKeys: String, CodingKey {
            case requests, rows, goal, reference
            case distinctKeys = "distinct_keys", workingSetBytes = "working_set_bytes", sizeUnit = "size_unit"
        }
    }

    static func json(_ report: ReplayReport) throws -> String {
        var rows: [JSONReport.Row] = []
        for (capacity, group) in grouped(report) {
            let reference = referenceRatio(in: group, of: report)
            let first = group.first { $0.bound == nil }?.figures ?? HitFigures()
            for row in group {
                rows.append(JSONReport.Row(
                    policy: row.policy, size: capacity, requests: row.bound == nil ? row.figures.requests : first.requests,
                    hits: row.bound == nil ? row.figures.hits : nil,
                    objectHitRatio: row.objectHitRatio, byteHitRatio: row.byteHitRatio,
                    costSavedRatio: row.costSavedRatio, costSaved: row.costSavedRatio * first.requestedCost,
                    ofReference: reference > 0 ? row.ratio(for: report.goal) / reference : nil,
                    switches: row.policy == "auto" ? row.switches.map { "\($0.to.rawValue)@\($0.afterRequests)" } : nil,
                    switchFigures: row.policy == "auto" ? row.recommendations.map {
                        JSONReport.SwitchFigures(to: $0.kind.rawValue, from: $0.from.rawValue, goal: $0.goal.rawValue,
                                                 simulated: Dictionary(uniqueKeysWithValues: $0.ratios.map {
                                                     ($0.key.rawValue, $0.value)
                                                 }), sizeSpread: $0.basis.sizeSpread)
                    } : nil,
                    nanosecondsPerRequest: row.nanosecondsPerRequest))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let value = JSONReport(requests: report.requests, distinctKeys: report.distinctKeys,
                               workingSetBytes: report.workingSetBytes,
                               sizeUnit: report.countsObjects ? "files" : "bytes", goal: report.goal.rawValue,
                               reference: report.referenceRow, rows: rows)
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
