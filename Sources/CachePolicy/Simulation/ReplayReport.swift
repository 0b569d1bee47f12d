/// Every policy, `auto` and an offline reference replayed over one trace at each size: what
/// `cachefs replay` prints, and what the bench compares the mount's figures with.
///
/// The reference is Belady's MIN where it is the optimum (every object takes the same room,
/// and the goal's measure counts every hit alike): the `belady` row. Elsewhere Belady's rule
/// is only a heuristic an online policy can beat (the `belady-heuristic` row), and the
/// reference is ``OptimumBound`` (the `upper-bound` row), which no cache of that size beats.
public struct ReplayReport: Sendable {
    public static let beladyRow = "belady"
    public static let beladyHeuristicRow = "belady-heuristic"
    public static let upperBoundRow = "upper-bound"

    public struct Row: Sendable, Equatable {
        /// A policy's name, `auto`, `belady`, `belady-heuristic` or `upper-bound`.
        public var policy: String
        public var capacity: Int64
        /// Zero for the upper bound, whose ratios are in `bound`.
        public var figures: HitFigures
        /// The upper bound's ratios (fractional hits).
        public var bound: OptimumBound?
        /// For `auto`: the policies it switched to, with the request count at each switch.
        public var switches: [(afterRequests: Int64, to: PolicyKind)] = []
        /// For `auto`: what each switch was decided on (the goal, and every candidate's
        /// simulated measure of it), in the order of `switches`.
        public var recommendations: [PolicyRecommendation] = []
        /// Time per request of the replay (the policy's work plus the simulator's own map of
        /// sizes): an upper bound on what the policy adds to a request.
        public var nanosecondsPerRequest: Double = 0

        public static func == (left: Row, right: Row) -> Bool {
            left.policy == right.policy && left.capacity == right.capacity && left.figures == right.figures
                && left.switches.map(\.afterRequests) == right.switches.map(\.afterRequests)
                && left.switches.map(\.to) == right.switches.map(\.to) && left.bound == right.bound
        }

        public var objectHitRatio: Double { bound?.objectHitRatio ?? figures.objectHitRatio }
        public var byteHitRatio: Double { bound?.byteHitRatio ?? figures.byteHitRatio }
        public var costSavedRatio: Double { bound?.costSavedRatio ?? figures.costSavedRatio }

        public func ratio(for goal: CacheGoal) -> Double { bound?.ratio(for: goal) ?? figures.ratio(for: goal) }
    }

    public var requests: Int
    /// Distinct keys read, and their bytes (each at its first size).
    public var distinctKeys: Int
    public var workingSetBytes: Int64
    public var countsObjects: Bool
    public var goal: CacheGoal
    /// Whether Belady's MIN is the optimum of the goal's measure on this trace (then the
    /// `belady` row is the reference), rather than a heuristic beside an upper bound.
    public var beladyIsExact: Bool
    public var rows: [Row]

    /// The row the others are measured against: `belady` where exact, else `upper-bound`.
    public var referenceRow: String { beladyIsExact ? Self.beladyRow : Self.upperBoundRow }

    /// `capacities` are bytes, or objects with `countsObjects`. Size- and cost-aware
    /// policies weigh objects by `goal`; `policies` defaults to the goal's candidates.
    /// Requests before `warmup` fill the caches but are not counted (a warm cache's figures).
    /// The policies' caches (not the optimum's) keep only what `admission` admits.
    public init(trace: [TraceRequest], capacities: [Int64], policies: [PolicyKind]? = nil,
                includingAuto: Bool = true, countsObjects: Bool = false, goal: CacheGoal = .files,
                warmup: Int = 0, admission: AdmissionRule = .everything) {
        var sizes: [CacheKey: Int64] = [:]
        for request in trace where request.operation == .get && sizes[request.key] == nil {
            sizes[request.key] = request.size
        }
        self.requests = trace.count { $0.operation == .get }
        distinctKeys = sizes.count
        workingSetBytes = sizes.values.reduce(0, +)
        self.countsObjects = countsObjects
        self.goal = goal
        beladyIsExact = Self.beladyIsExact(trace, countsObjects: countsObjects, goal: goal)
        var rows: [Row] = []
        for capacity in capacities {
            for kind in policies ?? PolicyKind.candidates(for: goal) {
                var cache = CacheSimulator(kind: kind, capacity: capacity, countsObjects: countsObjects, goal: goal)
                cache.admission = admission
                let time = Self.replay(trace, into: &cache, warmup: warmup)
                rows.append(Row(policy: kind.rawValue, capacity: capacity, figures: cache.figures,
                                nanosecondsPerRequest: time))
            }
            if includingAuto {
                var cache = AutoSimulator(capacity: capacity, countsObjects: countsObjects, goal: goal,
                                          admission: admission)
                let time = Self.replay(trace, into: &cache, warmup: warmup)
                rows.append(Row(policy: "auto", capacity: capacity, figures: cache.figures, switches: cache.switches,
                                recommendations: cache.recommendations, nanosecondsPerRequest: time))
            }
            rows.append(Row(policy: beladyIsExact ? Self.beladyRow : Self.beladyHeuristicRow, capacity: capacity,
                            figures: BeladyOptimum.run(trace, capacity: capacity, countsObjects: countsObjects,
                                                       warmup: warmup)))
            if !beladyIsExact {
                rows.append(Row(policy: Self.upperBoundRow, capacity: capacity, figures: HitFigures(),
                                bound: OptimumBound.run(trace, capacity: capacity, countsObjects: countsObjects,
                                                        warmup: warmup)))
            }
        }
        self.rows = rows
    }

    /// Belady's MIN maximises hits when every object takes the same room: then it is the
    /// optimum of the object hit ratio, of the byte hit ratio when the bytes are equal too,
    /// and of the cost saved when every request costs the same.
    static func beladyIsExact(_ trace: [TraceRequest], countsObjects: Bool, goal: CacheGoal) -> Bool {
        let stored = trace.filter { $0.operation != .delete }
        let equalSizes = stored.allSatisfy { $0.size == stored.first?.size }
        guard countsObjects || equalSizes else { return false }
        let reads = trace.filter { $0.operation == .get }
        switch goal {
        case .files: return true
        case .bytes: return equalSizes
        case .cost: return reads.allSatisfy { $0.cost == reads.first?.cost }
        }
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
