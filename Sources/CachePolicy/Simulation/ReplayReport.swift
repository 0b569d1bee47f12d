/// Every policy, `auto` and Belady's optimum replayed over one trace at each size: what
/// `cachefs replay` prints, and what the bench compares the mount's figures with.
public struct ReplayReport: Sendable {
    public struct Row: Sendable, Equatable {
        /// A policy's name, `auto`, or `belady`.
        public var policy: String
        public var capacity: Int64
        public var figures: HitFigures
        /// For `auto`: the policies it switched to, with the request count at each switch.
        public var switches: [(afterRequests: Int64, to: PolicyKind)] = []
        /// Time per request of the replay (the policy's work plus the simulator's own map of
        /// sizes): an upper bound on what the policy adds to a request.
        public var nanosecondsPerRequest: Double = 0

        public static func == (left: Row, right: Row) -> Bool {
            left.policy == right.policy && left.capacity == right.capacity && left.figures == right.figures
                && left.switches.map(\.afterRequests) == right.switches.map(\.afterRequests)
                && left.switches.map(\.to) == right.switches.map(\.to)
        }
    }

    public var requests: Int
    /// Distinct keys read, and their bytes (each at its first size).
    public var distinctKeys: Int
    public var workingSetBytes: Int64
    public var countsObjects: Bool
    public var rows: [Row]

    /// `capacities` are bytes, or objects with `countsObjects`.
    /// Requests before `warmup` fill the caches but are not counted (a warm cache's figures).
    public init(trace: [TraceRequest], capacities: [Int64], policies: [PolicyKind] = PolicyKind.allCases,
                includingAuto: Bool = true, countsObjects: Bool = false, warmup: Int = 0) {
        var sizes: [CacheKey: Int64] = [:]
        for request in trace where request.operation == .get && sizes[request.key] == nil {
            sizes[request.key] = request.size
        }
        self.requests = trace.count { $0.operation == .get }
        distinctKeys = sizes.count
        workingSetBytes = sizes.values.reduce(0, +)
        self.countsObjects = countsObjects
        var rows: [Row] = []
        for capacity in capacities {
            for kind in policies {
                var cache = CacheSimulator(kind: kind, capacity: capacity, countsObjects: countsObjects)
                let time = Self.replay(trace, into: &cache, warmup: warmup)
                rows.append(Row(policy: kind.rawValue, capacity: capacity, figures: cache.figures,
                                nanosecondsPerRequest: time))
            }
            if includingAuto {
                var cache = AutoSimulator(capacity: capacity, countsObjects: countsObjects)
                let time = Self.replay(trace, into: &cache, warmup: warmup)
                rows.append(Row(policy: "auto", capacity: capacity, figures: cache.figures, switches: cache.switches,
                                nanosecondsPerRequest: time))
            }
            rows.append(Row(policy: "belady", capacity: capacity,
                            figures: BeladyOptimum.run(trace, capacity: capacity, countsObjects: countsObjects,
                                                       warmup: warmup)))
        }
        self.rows = rows
    }

    /// Runs the trace through a cache, counting from `warmup` on; returns the time per request.
    private static func replay<Cache: TraceCache>(_ trace: [TraceRequest], into cache: inout Cache,
                                                  warmup: Int) -> Double {
        let started = ContinuousClock.now
        for (index, request) in trace.enumerated() {
            if index == warmup { cache.resetFigures() }
            switch request.operation {
            case .get: cache.get(request.key, size: request.size, cost: request.cost)
            case .set: cache.set(request.key, size: request.size, cost: request.cost)
            case .delete: cache.delete(request.key)
            }
        }
        let elapsed = ContinuousClock.now - started
        let total = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        return trace.isEmpty ? 0 : total / Double(trace.count)
    }
}

/// What a trace can be replayed into: a simulated cache of one policy, or of `auto`.
protocol TraceCache {
    @discardableResult
    mutating func get(_ key: CacheKey, size: Int64, cost: Double) -> Bool
    mutating func set(_ key: CacheKey, size: Int64, cost: Double)
    mutating func delete(_ key: CacheKey)
    mutating func resetFigures()
    var figures: HitFigures { get }
}

extension CacheSimulator: TraceCache {}

extension AutoSimulator: TraceCache {
    public var figures: HitFigures { cache.figures }
}
