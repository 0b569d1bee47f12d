/// What `auto`'s simulations recommend, and why: the goal they scored and each candidate's
/// measure of it (what a `policy-changed` event reports).
public struct PolicyRecommendation: Sendable, Equatable {
    /// The policy to switch to.
    public var kind: PolicyKind
    /// The policy the pool runs now.
    public var from: PolicyKind
    public var goal: CacheGoal
    /// Each candidate's measure of `goal` over the recent sampled requests: its object hit
    /// ratio (`files`), byte hit ratio (`bytes`) or share of the requests' cost its hits saved
    /// (`cost`).
    public var ratios: [PolicyKind: Double]
    /// The lead `kind` needed over `from` (see ``PolicyAdvisor/requiredLead(of:over:)``).
    public var margin: Double
    /// What the switch rests on: a lead in the simulations, or (once, at `auto`'s start) the
    /// spread of the pool's file sizes.
    public var basis: Basis = .lead

    public enum Basis: Sendable, Equatable {
        /// `kind` led `from` by `margin` at `PolicyAdvisor.checksToSwitch` looks in a row.
        case lead
        /// The sampled sizes' spread (``SizeSpread``) was at least
        /// `PolicyAdvisor.sizesVaryAbove` and the goal counts files or cost, where a
        /// size-aware policy is the one to start from.
        case sizesVary(spread: Double)

        /// The spread a size-aware start rested on; nil for a lead.
        public var sizeSpread: Double? {
            if case .sizesVary(let spread) = self { return spread }
            return nil
        }
    }

    /// By how much `kind` leads `from` on the goal's measure.
    public var lead: Double { (ratios[kind] ?? 0) - (ratios[from] ?? 0) }
}

/// A pool's miniature simulations (Waldspurger et al., ATC '17): caches of the pool's size
/// times the sampling rate, fed only the pool's spatially sampled requests, one per
/// candidate policy, and one of the current policy at each what-if size. They say which
/// policy would have done best lately by the pool's goal (`auto`: most files, most bytes or
/// most cost hit) and that measure at other sizes (the curve), in memory bounded by the
/// samplers' key limits whatever the traffic.
///
/// The candidates and the curve are sampled apart, each at the rate its own bound allows: the
/// curve's largest simulation is 8 times the pool, and held to the curve's bound it would leave
/// the candidates, which decide `auto`'s switches, too few names to judge by.
public struct PolicyAdvisor: Sendable {
    /// The sizes of the what-if curve, as multiples of the pool's limit.
    public static let multipliers: [Double] = [0.125, 0.25, 0.5, 1, 2, 4, 8]
    /// Names the curve's largest simulation (8x) may hold before its sampling rate halves,
    /// which bounds the curve's memory whatever the pool's size.
    public static let defaultMaxSampledKeys = 4_096
    /// Names each candidate's simulation (1x) may hold before their sampling rate halves. A
    /// pool of up to 2,048 files is compared whole (about 2 µs of the daemon's time per
    /// request); a larger one is sampled. A quarter as many (512) sampled 1 request in 8 on
    /// the bench's block trace at 5 %, where the miniature SIEVE led LRU by 0.06 while the
    /// full-size one trails it by 0.14, and `auto` ended 0.013 under the best fixed policy;
    /// with 2,048, 0.007 under. With the curve's, the advisor then holds about 3.8 MB in a
    /// pool of 100,000 files (0.8 MB more than with 512).
    public static let defaultMaxComparedKeys = 2_048
    /// Sampled requests (of the candidates') between two looks at which policy leads, and
    /// how many looks in a row another one must lead by `requiredLead` before `auto`
    /// switches: it never flaps on noise.
    static let checkPeriod = 256
    static let checksToSwitch = 4
    /// The least lead that switches: all a count of files (goal `files`) needs.
    static let switchMargin = 0.005
    /// How many times the noise the goal's weights add to a lead it must also exceed.
    /// 1.5 to 3 all end within 0.01 of the best policy on the bench's byte traces, 1 does not.
    static let marginInAddedStandardErrors = 2.0
    /// The policy `auto` runs until its simulations have seen enough to choose: S3-FIFO, the
    /// best of the candidates on most published workloads, so the time it takes them to warm
    /// up costs little (starting from LRU cost up to 0.006 of hit ratio on the bench's traces).
    public static let autoStart = PolicyKind.s3fifo
    /// Where `auto` goes at its first look when the pool's files differ in size and its goal
    /// is `files` or `cost`: GDSF, which keeps the files that save most per byte held. Its
    /// simulation needs as long to show its lead as a pool takes to fill, and a switch made
    /// that late cost up to 0.011 of the goal's measure on the bench's mixed-size traces at
    /// 25 % (`auto` against the best fixed policy); starting there, 0.000. Where sizes are
    /// equal GDSF is an LFU with aging, 0.02 to 0.08 behind S3-FIFO on the bench's unit-size
    /// traces, so `auto` stays on S3-FIFO.
    public static let sizeAwareStart = PolicyKind.gdsf
    /// The least ``SizeSpread`` of the sampled requests' sizes (by the first look) that counts
    /// as sizes that vary: 0 on the bench's unit-size traces, 1.9 on its lognormal traces, 0.5
    /// on its heavy-tailed one (whose popular files are its small ones).
    static let sizesVaryAbove = 0.35
    /// Sampled requests before a curve or a recommendation is given at all.
    static let minimumRequests = 256

    public private(set) var current: PolicyKind
    /// The policies simulated at the pool's size: ``PolicyKind/candidates(for:)`` of the goal.
    public private(set) var candidates: [PolicyKind]
    /// What the simulations score (and what `gdsf` weighs files by in them).
    public private(set) var goal: CacheGoal
    private var capacityBytes: Int64
    private var capacityFiles: Int64
    private let maxSampledKeys: Int
    private let maxComparedKeys: Int
    /// One simulation per candidate at the pool's size, in `candidates`' order.
    private var compared: SampledSimulations
    /// The current policy's simulation at each of `multipliers`.
    private var whatIf: SampledSimulations
    private var sinceCheck = 0
    private var leadingStreak: (kind: PolicyKind, checks: Int)?
    /// The sampled sizes until the first look (only an `auto` pool's advisor is looked at, so
    /// a pool that ran another policy before brings its sizes along), which decides whether
    /// `auto` starts from a size-aware policy; then `startDecided`.
    private var sizes = SizeSpread()
    private var startDecided = false

    public init(current: PolicyKind, goal: CacheGoal = .files,
                capacityBytes: Int64, capacityFiles: Int64,
                maxSampledKeys: Int = PolicyAdvisor.defaultMaxSampledKeys,
                maxComparedKeys: Int = PolicyAdvisor.defaultMaxComparedKeys) {
        self.maxSampledKeys = maxSampledKeys
        self.maxComparedKeys = maxComparedKeys
        self.current = current
        self.candidates = PolicyKind.candidates(for: goal)
        self.goal = goal
        self.capacityBytes = capacityBytes
        self.capacityFiles = capacityFiles
        compared = Self.comparing(candidates, capacityBytes: capacityBytes, capacityFiles: capacityFiles,
                                  goal: goal, maxNames: maxComparedKeys)
        whatIf = Self.whatIf(of: current, capacityBytes: capacityBytes, capacityFiles: capacityFiles, goal: goal,
                           maxNames: maxSampledKeys)
    }

    private var countsObjects: Bool { capacityBytes <= 0 }
    private var capacity: Int64 { countsObjects ? capacityFiles : capacityBytes }

    private static func comparing(_ candidates: [PolicyKind], capacityBytes: Int64, capacityFiles: Int64,
                                  goal: CacheGoal, maxNames: Int) -> SampledSimulations {
        SampledSimulations(kinds: candidates, sizes: candidates.map { _ in 1 },
                           capacity: capacityBytes <= 0 ? capacityFiles : capacityBytes,
                           countsObjects: capacityBytes <= 0, goal: goal, comparedCount: candidates.count,
                           boundedIndex: 0, maxNames: maxNames)
    }

    private static func whatIf(of kind: PolicyKind, capacityBytes: Int64, capacityFiles: Int64, goal: CacheGoal,
                              maxNames: Int) -> SampledSimulations {
        SampledSimulations(kinds: multipliers.map { _ in kind }, sizes: multipliers,
                           capacity: capacityBytes <= 0 ? capacityFiles : capacityBytes,
                           countsObjects: capacityBytes <= 0, goal: goal, comparedCount: 0,
                           boundedIndex: multipliers.count - 1, maxNames: maxNames)
    }

    /// Starts every simulation afresh (a new size or goal).
    private mutating func rebuild() {
        compared = Self.comparing(candidates, capacityBytes: capacityBytes, capacityFiles: capacityFiles, goal: goal,
                                  maxNames: maxComparedKeys)
        rebuildCurve()
        sinceCheck = 0
        leadingStreak = nil
    }

    private mutating func rebuildCurve() {
        whatIf = Self.whatIf(of: current, capacityBytes: capacityBytes, capacityFiles: capacityFiles, goal: goal,
                           maxNames: maxSampledKeys)
    }

    public mutating func setCapacity(bytes: Int64, files: Int64) {
        guard bytes != capacityBytes || files != capacityFiles else { return }
        capacityBytes = bytes
        capacityFiles = files
        rebuild()
    }

    /// The pool now optimises `goal`: the simulations start afresh, scored by its measure.
    public mutating func setGoal(_ goal: CacheGoal) {
        guard goal != self.goal else { return }
        self.goal = goal
        candidates = PolicyKind.candidates(for: goal)
        rebuild()
    }

    /// The pool now runs `kind`: the curve's simulations run it too, from empty; the
    /// candidates' go on.
    public mutating func setCurrent(_ kind: PolicyKind) {
        guard kind != current else { return }
        current = kind
        rebuildCurve()
    }

    /// A request of the pool's (a hit, or a miss about to be inserted), `size` bytes large,
    /// whose miss costs `cost` (milliseconds; used by the `cost` goal). Unsampled requests
    /// cost a hash and a compare per group.
    public mutating func record(fingerprint: UInt64, size: Int64, cost: Double = 0) {
        guard capacity > 0 else { return }
        let weight = goal.cost(size: size, measured: cost)
        whatIf.record(fingerprint: fingerprint, size: size, cost: cost, weight: weight)
        guard compared.record(fingerprint: fingerprint, size: size, cost: cost, weight: weight) != nil else { return }
        if !startDecided { sizes.add(size: size) }
        sinceCheck += 1
    }

    /// Sampled requests the candidates have seen since the advisor (re)started.
    public var sampledRequests: Int { compared.sampledRequests }

    /// Each candidate's measure of the goal over the recent sampled requests: its object hit
    /// ratio, byte hit ratio, or share of the cost saved.
    public func hitRatios() -> [PolicyKind: Double] {
        guard compared.requests > 0 else { return [:] }
        return Dictionary(uniqueKeysWithValues: candidates.enumerated().map { ($1, compared.adjustedRatio($0)) })
    }

    /// The lead `leader` needs over `current` on the goal's measure: `switchMargin`, or
    /// `marginInAddedStandardErrors` times what the goal's weights add to the lead's
    /// standard error if more. That error comes from the sampled requests the two disagreed
    /// on, each counting its weight (under `files` 1, so nothing is added; under `bytes` one
    /// large file can be most of the lead, and a lead it makes comes and goes with it).
    func requiredLead(of leader: PolicyKind, over current: PolicyKind) -> Double {
        guard let leaderIndex = candidates.firstIndex(of: leader), let currentIndex = candidates.firstIndex(of: current),
              leaderIndex != currentIndex, compared.requests > 0 else { return Self.switchMargin }
        let pair = compared.disagreement(leaderIndex, currentIndex)
        let weighted = pair.squaredWeights.squareRoot() / compared.requests
        let counted = pair.squaredUnitWeights.squareRoot() / compared.requestCount
        return max(Self.switchMargin, Self.marginInAddedStandardErrors * (weighted - counted))
    }

    /// A policy to switch to, when another has led the current one on the goal's measure by
    /// `requiredLead` for `checksToSwitch` looks in a row; nil otherwise. Called by the
    /// evictor's rounds.
    public mutating func recommendation() -> PolicyRecommendation? {
        guard sampledRequests >= Self.minimumRequests, sinceCheck >= Self.checkPeriod else { return nil }
        sinceCheck = 0
        let ratios = hitRatios()
        if !startDecided {
            startDecided = true
            if let start = sizeAwareStart(ratios: ratios) { return start }
        }
        guard let best = candidates.max(by: { (ratios[$0] ?? 0) < (ratios[$1] ?? 0) }), best != current else {
            leadingStreak = nil
            return nil
        }
        let margin = requiredLead(of: best, over: current)
        guard (ratios[best] ?? 0) - (ratios[current] ?? 0) >= margin else {
            leadingStreak = nil
            return nil
        }
        let checks = leadingStreak?.kind == best ? leadingStreak!.checks + 1 : 1
        leadingStreak = (best, checks)
        guard checks >= Self.checksToSwitch else { return nil }
        leadingStreak = nil
        return PolicyRecommendation(kind: best, from: current, goal: goal, ratios: ratios, margin: margin)
    }

    /// At the first look of an advisor still on ``autoStart``: ``sizeAwareStart`` when the
    /// goal weighs files (`files`, `cost`) and the sampled sizes vary; nil otherwise.
    private func sizeAwareStart(ratios: [PolicyKind: Double]) -> PolicyRecommendation? {
        let spread = sizes.spread
        guard current == Self.autoStart, goal != .bytes, candidates.contains(Self.sizeAwareStart),
              spread >= Self.sizesVaryAbove else { return nil }
        return PolicyRecommendation(kind: Self.sizeAwareStart, from: current, goal: goal, ratios: ratios, margin: 0,
                                    basis: .sizesVary(spread: spread))
    }

    /// The current policy's estimated measure of the goal (the hit ratio, for `files`) at
    /// each what-if size; empty until enough requests were sampled.
    public func curve() -> [(multiplier: Double, sizeBytes: Int64, sizeFiles: Int64, hitRatio: Double)] {
        guard whatIf.sampledRequests >= Self.minimumRequests, whatIf.requests > 0 else { return [] }
        return Self.multipliers.enumerated().map { index, multiplier in
            (multiplier,
             countsObjects ? 0 : max(1, Int64((Double(capacityBytes) * multiplier).rounded())),
             countsObjects ? max(1, Int64((Double(capacityFiles) * multiplier).rounded())) : 0,
             whatIf.adjustedRatio(index))
        }
    }

    /// The curve's sampling rate now (1 while its 8x simulation holds at most
    /// `maxSampledKeys` names).
    public var samplingRate: Double { whatIf.sampler.rate }

    /// The candidates' sampling rate now (1 while each holds at most `maxComparedKeys` names).
    public var comparedSamplingRate: Double { compared.sampler.rate }

    /// Names the curve's largest simulation holds: the bound on the curve's memory.
    public var namesHeld: Int { whatIf.namesHeld }

    /// Names each candidate's simulation holds at most: the bound on the candidates' memory.
    public var comparedNamesHeld: Int { compared.simulations.map(\.residentCount).max() ?? 0 }

    /// The bytes the simulations' storage holds (their policies' `memoryBytes` and their size
    /// and cost maps) and the advisor's own arrays: `user.cache.simulation_memory_bytes`.
    /// O(simulations), allocates nothing.
    public var memoryBytes: Int {
        compared.memoryBytes + whatIf.memoryBytes + MemoryBytes.of(candidates)
    }
}

