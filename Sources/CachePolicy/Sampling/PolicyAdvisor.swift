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
    /// row another one must lead by `requiredLead` before `auto` switches: it never flaps
    /// on noise.
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
    private var sampler = SpatialSampler()
    private let maxSampledKeys: Int
    /// One simulation per candidate at the pool's size.
    private var bySize: [PolicyKind: Int] = [:]
    private var simulations: [CacheSimulator] = []
    /// The current policy's simulation at each of `multipliers`.
    private var curveSimulations: [Int] = []
    /// Each simulation's hits, weighed by the goal (one per file, its bytes, or its cost).
    private var hits: [Double] = []
    /// Per pair of candidates, what a lead between them varies with: the sampled requests
    /// one of them hit and the other missed.
    private var disagreements: [Disagreement] = []
    /// The sampled requests' weight, and every request's weight times the rate (what a
    /// perfect sample would have seen), over the same recent window: SHARDS-adj's
    /// correction, by the goal's measure.
    private var requests = 0.0
    private var expectedRequests = 0.0
    /// The sampled requests over the same window, each counting 1.
    private var requestCount = 0.0
    public private(set) var sampledRequests = 0
    private var sinceCheck = 0
    private var leadingStreak: (kind: PolicyKind, checks: Int)?
    /// The sampled sizes until the first look (only an `auto` pool's advisor is looked at, so
    /// a pool that ran another policy before brings its sizes along), which decides whether
    /// `auto` starts from a size-aware policy; then `startDecided`.
    private var sizes = SizeSpread()
    private var startDecided = false

    public init(current: PolicyKind, goal: CacheGoal = .files,
                capacityBytes: Int64, capacityFiles: Int64,
                maxSampledKeys: Int = PolicyAdvisor.defaultMaxSampledKeys) {
        self.maxSampledKeys = maxSampledKeys
        self.current = current
        self.candidates = PolicyKind.candidates(for: goal)
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
        candidates = PolicyKind.candidates(for: goal)
        rebuild()
    }

    /// The pool now runs `kind`: the curve's simulations run it too, from empty.
    public mutating func setCurrent(_ kind: PolicyKind) {
        guard kind != current else { return }
        current = kind
        let kept = bySize.mapValues { simulations[$0] }
        let keptHits = bySize.mapValues { hits[$0] }
        let keptDisagreements = disagreements
        let keptRequests = (requests, expectedRequests, requestCount)
        rebuild()
        for (kind, index) in bySize {
            if let simulation = kept[kind] { simulations[index] = simulation }
            hits[index] = keptHits[kind] ?? 0
        }
        disagreements = keptDisagreements
        (requests, expectedRequests, requestCount) = keptRequests
    }

    private mutating func resetFigures() {
        hits = Array(repeating: 0, count: simulations.count)
        disagreements = Array(repeating: Disagreement(), count: candidates.count * candidates.count)
        requests = 0
        expectedRequests = 0
        requestCount = 0
    }

    /// A request of the pool's (a hit, or a miss about to be inserted), `size` bytes large,
    /// whose miss costs `cost` (milliseconds; used by the `cost` goal). Unsampled requests
    /// cost a hash and a compare.
    public mutating func record(fingerprint: UInt64, size: Int64, cost: Double = 0) {
        guard capacity > 0 else { return }
        let weight = goal.cost(size: size, measured: cost)
        expectedRequests += sampler.rate * weight
        guard sampler.samples(fingerprint) else { return }
        if !startDecided { sizes.add(size: size) }
        let key = Int64(bitPattern: fingerprint)
        var candidatesHit: UInt64 = 0
        for index in simulations.indices where simulations[index].get(key, size: size, cost: cost) {
            hits[index] += weight
            if index < candidates.count { candidatesHit |= 1 << UInt64(index) }
        }
        recordDisagreements(candidatesHit: candidatesHit, weight: weight)
        requests += weight
        requestCount += 1
        sampledRequests += 1
        sinceCheck += 1
        if sampledRequests % Self.decayPeriod == 0 {
            requests /= 2
            expectedRequests /= 2
            requestCount /= 2
            for index in hits.indices { hits[index] /= 2 }
            for index in disagreements.indices { disagreements[index].halveWeights() }
        }
        if let largest = curveSimulations.last, simulations[largest].residentCount > maxSampledKeys {
            lowerSamplingRate()
        }
    }

    private mutating func recordDisagreements(candidatesHit: UInt64, weight: Double) {
        let count = candidates.count
        guard candidatesHit != 0, candidatesHit != (1 << UInt64(count)) - 1 else { return }
        let hit = { (index: Int) in candidatesHit & (1 << UInt64(index)) != 0 }
        for first in 0..<count {
            for second in (first + 1)..<count where hit(first) != hit(second) {
                disagreements[first * count + second].add(weight: weight)
            }
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

    /// The lead `leader` needs over `current` on the goal's measure: `switchMargin`, or
    /// `marginInAddedStandardErrors` times what the goal's weights add to the lead's
    /// standard error if more. That error comes from the sampled requests the two disagreed
    /// on, each counting its weight (under `files` 1, so nothing is added; under `bytes` one
    /// large file can be most of the lead, and a lead it makes comes and goes with it).
    func requiredLead(of leader: PolicyKind, over current: PolicyKind) -> Double {
        guard let leaderIndex = bySize[leader], let currentIndex = bySize[current], leaderIndex != currentIndex,
              requests > 0 else { return Self.switchMargin }
        let pair = disagreements[min(leaderIndex, currentIndex) * candidates.count + max(leaderIndex, currentIndex)]
        let weighted = pair.squaredWeights.squareRoot() / requests
        let counted = pair.squaredUnitWeights.squareRoot() / requestCount
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

    /// The bytes the simulations' storage holds (their policies' `memoryBytes` and their size
    /// and cost maps) and the advisor's own arrays: `user.cache.simulation_memory_bytes`.
    /// O(simulations), allocates nothing.
    public var memoryBytes: Int {
        var total = MemoryBytes.of(simulations) + MemoryBytes.of(curveSimulations) + MemoryBytes.of(hits)
            + MemoryBytes.of(disagreements) + MemoryBytes.of(candidates) + MemoryBytes.of(bySize)
        for simulation in simulations { total += simulation.memoryBytes }
        return total
    }
}

/// The sampled requests on which two candidates disagreed (one hit, the other missed), over
/// the figures' decaying window: the sum of their weights squared, from which a lead's
/// standard error is estimated (each request taken as an independent draw), and the same
/// sum with every weight 1 (what a count of files would have).
struct Disagreement: Sendable {
    private(set) var squaredWeights = 0.0
    private(set) var squaredUnitWeights = 0.0

    mutating func add(weight: Double) {
        squaredWeights += weight * weight
        squaredUnitWeights += 1
    }

    /// The window's decay halves every weight, so their squares quarter.
    mutating func halveWeights() {
        squaredWeights /= 4
        squaredUnitWeights /= 4
    }
}
