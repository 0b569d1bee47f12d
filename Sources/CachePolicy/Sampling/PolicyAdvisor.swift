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

    /// By how much `kind` leads `from` on the goal's measure.
    public var lead: Double { (ratios[kind] ?? 0) - (ratios[from] ?? 0) }
}

/// A pool's miniature simulations (Waldspurger et al., ATC '17): caches of the pool's size
/// times the sampling rate, fed only the pool's spatially sampled requests, one per
/// candidate policy, and one of the current policy at each what-if size. They say which
/// policy would have done best lately by the pool's goal (`auto`: most files, most bytes or
/// most cost hit) and that measure at other sizes (the curve), in memory bounded by the
/// sampler's key limit whatever the traffic.
public struct PolicyAdvisor: Sendable {
    /// The sizes of the what-if curve, as multiples of the pool's limit.
    public static let multipliers: [Double] = [0.125, 0.25, 0.5, 1, 2, 4, 8]
    /// Names the largest simulation (8x) may hold before the sampling rate halves: about 60
    /// bytes each across the ten simulations, so a pool's advisor stays near half a megabyte
    /// whatever its size. A pool of up to 512 files is simulated whole (about 2 µs a request
    /// across the ten simulations); a larger one is sampled, about 1 µs a request on average.
    /// Half as many names (2,048) made `auto` decide late enough to lose 0.015 of hit ratio
    /// on the bench's scan trace.
    public static let defaultMaxSampledKeys = 4_096
    /// Hits and requests halve every this many sampled requests: the figures follow the
    /// pool's recent reads (a few cache-fulls), not its whole history.
    static let decayPeriod = 8_192
    /// Sampled requests between two looks at which policy leads, and how many looks in a
    /// row another one must lead by `switchMargin` before `auto` switches: it never flaps
    /// on noise.
    static let checkPeriod = 256
    static let checksToSwitch = 4
    static let switchMargin = 0.005
    /// The policy `auto` runs until its simulations have seen enough to choose: S3-FIFO, the
    /// best of the candidates on most published workloads, so the time it takes them to warm
    /// up costs little (starting from LRU cost up to 0.006 of hit ratio on the bench's traces).
    public static let autoStart = PolicyKind.s3fifo
    /// Sampled requests before a curve or a recommendation is given at all.
    static let minimumRequests = 256

    public private(set) var current: PolicyKind
    public let candidates: [PolicyKind]
    /// What the simulations score (and what `gdsf` weighs files by in them).
    public private(set) var goal: CacheGoal
    private var capacityBytes: Int64
    private var capacityFiles: Int64
    private var sampler = SpatialSampler()
    private let maxSampledKeys: Int
    /// One simulation per candidate at the pool's size.
    private var bySize: [PolicyKind: Int] = [:]
    private var simulations: [CacheSimulator] = []
    /// The current policy's simulation at each of `multipliers`.
    private var curveSimulations: [Int] = []
    /// Each simulation's hits, weighed by the goal (one per file, its bytes, or its cost).
    private var hits: [Double] = []
    /// The sampled requests' weight, and every request's weight times the rate (what a
    /// perfect sample would have seen), over the same recent window: SHARDS-adj's
    /// correction, by the goal's measure.
    private var requests = 0.0
    private var expectedRequests = 0.0
    public private(set) var sampledRequests = 0
    private var sinceCheck = 0
    private var leadingStreak: (kind: PolicyKind, checks: Int)?

    public init(current: PolicyKind, candidates: [PolicyKind] = PolicyKind.allCases, goal: CacheGoal = .files,
                capacityBytes: Int64, capacityFiles: Int64,
                maxSampledKeys: Int = PolicyAdvisor.defaultMaxSampledKeys) {
        self.maxSampledKeys = maxSampledKeys
        self.current = current
        self.candidates = candidates
        self.goal = goal
        self.capacityBytes = capacityBytes
        self.capacityFiles = capacityFiles
        rebuild()
    }

    private var countsObjects: Bool { capacityBytes <= 0 }
    private var capacity: Int64 { countsObjects ? capacityFiles : capacityBytes }

    private func scaled(_ multiplier: Double) -> Int64 {
        max(1, Int64((Double(capacity) * multiplier * sampler.rate).rounded()))
    }

    /// Starts the simulations afresh (a new size, a new current policy for the curve).
    private mutating func rebuild() {
        simulations = []
        bySize = [:]
        for kind in candidates {
            bySize[kind] = simulations.count
            simulations.append(CacheSimulator(kind: kind, capacity: scaled(1), countsObjects: countsObjects, goal: goal))
        }
        curveSimulations = Self.multipliers.map { multiplier in
            if multiplier == 1, let index = bySize[current] { return index }
            simulations.append(CacheSimulator(kind: current, capacity: scaled(multiplier), countsObjects: countsObjects,
                                              goal: goal))
            return simulations.count - 1
        }
        resetFigures()
        sampledRequests = 0
        sinceCheck = 0
        leadingStreak = nil
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
        rebuild()
    }

    /// The pool now runs `kind`: the curve's simulations run it too, from empty.
    public mutating func setCurrent(_ kind: PolicyKind) {
        guard kind != current else { return }
        current = kind
        let kept = bySize.mapValues { simulations[$0] }
        let keptHits = bySize.mapValues { hits[$0] }
        let keptRequests = requests
        let keptExpected = expectedRequests
        rebuild()
        for (kind, index) in bySize {
            if let simulation = kept[kind] { simulations[index] = simulation }
            hits[index] = keptHits[kind] ?? 0
        }
        requests = keptRequests
        expectedRequests = keptExpected
    }

    private mutating func resetFigures() {
        hits = Array(repeating: 0, count: simulations.count)
        requests = 0
        expectedRequests = 0
    }

    /// A request of the pool's (a hit, or a miss about to be inserted), `size` bytes large,
    /// whose miss costs `cost` (milliseconds; used by the `cost` goal). Unsampled requests
    /// cost a hash and a compare.
    public mutating func record(fingerprint: UInt64, size: Int64, cost: Double = 0) {
        guard capacity > 0 else { return }
        let weight = goal.cost(size: size, measured: cost)
        expectedRequests += sampler.rate * weight
        guard sampler.samples(fingerprint) else { return }
        let key = Int64(bitPattern: fingerprint)
        for index in simulations.indices where simulations[index].get(key, size: size, cost: cost) {
            hits[index] += weight
        }
        requests += weight
        sampledRequests += 1
        sinceCheck += 1
        if sampledRequests % Self.decayPeriod == 0 {
            requests /= 2
            expectedRequests /= 2
            for index in hits.indices { hits[index] /= 2 }
        }
        if let largest = curveSimulations.last, simulations[largest].residentCount > maxSampledKeys {
            lowerSamplingRate()
        }
    }

    /// Halves the rate: the simulations forget the names no longer sampled and shrink to
    /// the new scale; the figures start again (they were counted at the old rate).
    private mutating func lowerSamplingRate() {
        sampler.halve()
        for index in simulations.indices {
            simulations[index].removeAll { !sampler.samples(UInt64(bitPattern: $0)) }
            simulations[index].resize(to: max(1, simulations[index].capacity / 2))
        }
        resetFigures()
    }

    /// A simulation's measure of the goal over the recent window, corrected as SHARDS-adj
    /// does: the sampled weight beyond (or short of) what the rate leads to expect is taken
    /// off (or added to) the hits, since a sample's excess comes from its most popular names.
    private func adjustedRatio(_ index: Int) -> Double {
        guard expectedRequests > 0 else { return 0 }
        let excess = requests - expectedRequests
        return min(1, max(0, (hits[index] - excess) / expectedRequests))
    }

    /// Each candidate's measure of the goal over the recent sampled requests: its object hit
    /// ratio, byte hit ratio, or share of the cost saved.
    public func hitRatios() -> [PolicyKind: Double] {
        guard requests > 0 else { return [:] }
        return bySize.mapValues { adjustedRatio($0) }
    }

    /// A policy to switch to, when another has led the current one on the goal's measure by
    /// `switchMargin` for `checksToSwitch` looks in a row; nil otherwise. Called by the
    /// evictor's rounds.
    public mutating func recommendation() -> PolicyRecommendation? {
        guard sampledRequests >= Self.minimumRequests, sinceCheck >= Self.checkPeriod else { return nil }
        sinceCheck = 0
        let ratios = hitRatios()
        let currentRatio = ratios[current] ?? 0
        guard let best = candidates.max(by: { (ratios[$0] ?? 0) < (ratios[$1] ?? 0) }),
              best != current, (ratios[best] ?? 0) - currentRatio >= Self.switchMargin else {
            leadingStreak = nil
            return nil
        }
        let checks = leadingStreak?.kind == best ? leadingStreak!.checks + 1 : 1
        leadingStreak = (best, checks)
        guard checks >= Self.checksToSwitch else { return nil }
        leadingStreak = nil
        return PolicyRecommendation(kind: best, from: current, goal: goal, ratios: ratios)
    }

    /// The current policy's estimated measure of the goal (the hit ratio, for `files`) at
    /// each what-if size; empty until enough requests were sampled.
    public func curve() -> [(multiplier: Double, sizeBytes: Int64, sizeFiles: Int64, hitRatio: Double)] {
        guard sampledRequests >= Self.minimumRequests, requests > 0 else { return [] }
        return zip(Self.multipliers, curveSimulations).map { multiplier, index in
            (multiplier,
             countsObjects ? 0 : max(1, Int64((Double(capacityBytes) * multiplier).rounded())),
             countsObjects ? max(1, Int64((Double(capacityFiles) * multiplier).rounded())) : 0,
             adjustedRatio(index))
        }
    }

    /// The sampling rate now (1 while the 8x simulation holds at most `maxSampledKeys` names).
    public var samplingRate: Double { sampler.rate }

    /// Names the largest simulation holds: the bound on the advisor's memory.
    public var namesHeld: Int { curveSimulations.last.map { simulations[$0].residentCount } ?? 0 }
}
