/// Miniature simulations fed one spatial sample of a pool's requests (SHARDS), with their
/// measure of the goal over a decaying window. The sampling rate halves whenever the
/// simulation at `boundedIndex` holds more than `maxNames` names, which bounds the memory of
/// the whole group. ``PolicyAdvisor`` keeps two: the candidates at the pool's size, and the
/// current policy at the what-if sizes.
struct SampledSimulations: Sendable {
    /// Hits and requests halve every this many sampled requests: the figures follow the
    /// pool's recent reads (a few cache-fulls), not its whole history.
    static let decayPeriod = 8_192

    private(set) var sampler = SpatialSampler()
    private(set) var simulations: [CacheSimulator] = []
    /// Each simulation's hits, weighed by the goal (one per file, its bytes, or its cost).
    private var hits: [Double] = []
    /// The sampled requests' weight, and every request's weight times the rate (what a
    /// perfect sample would have seen), over the same recent window: SHARDS-adj's
    /// correction, by the goal's measure.
    private(set) var requests = 0.0
    private var expectedRequests = 0.0
    /// The sampled requests over the same window, each counting 1.
    private(set) var requestCount = 0.0
    private(set) var sampledRequests = 0
    /// Per pair of the first `comparedCount` simulations, what a lead between them varies
    /// with: the sampled requests one of them hit and the other missed.
    private var disagreements: [Disagreement] = []
    private let comparedCount: Int
    private let boundedIndex: Int
    private let maxNames: Int

    /// `sizes` are the simulations' sizes as multiples of `capacity` at a rate of 1.
    init(kinds: [PolicyKind], sizes: [Double], capacity: Int64, countsObjects: Bool, goal: CacheGoal,
         comparedCount: Int, boundedIndex: Int, maxNames: Int) {
        self.comparedCount = comparedCount
        self.boundedIndex = boundedIndex
        self.maxNames = maxNames
        simulations = zip(kinds, sizes).map { kind, multiplier in
            CacheSimulator(kind: kind, capacity: max(1, Int64((Double(capacity) * multiplier).rounded())),
                           countsObjects: countsObjects, goal: goal)
        }
        resetFigures()
    }

    /// A request of `weight` by the goal's measure. Returns which of the compared
    /// simulations hit it (bit i for simulation i), or nil when it is not sampled.
    @discardableResult
    mutating func record(fingerprint: UInt64, size: Int64, cost: Double, weight: Double) -> UInt64? {
        expectedRequests += sampler.rate * weight
        guard sampler.samples(fingerprint) else { return nil }
        let key = Int64(bitPattern: fingerprint)
        var comparedHit: UInt64 = 0
        for index in simulations.indices where simulations[index].get(key, size: size, cost: cost) {
            hits[index] += weight
            if index < comparedCount { comparedHit |= 1 << UInt64(index) }
        }
        recordDisagreements(comparedHit: comparedHit, weight: weight)
        requests += weight
        requestCount += 1
        sampledRequests += 1
        if sampledRequests % Self.decayPeriod == 0 {
            requests /= 2
            expectedRequests /= 2
            requestCount /= 2
            for index in hits.indices { hits[index] /= 2 }
            for index in disagreements.indices { disagreements[index].halveWeights() }
        }

        if simulations[boundedIndex].residentCount > maxNames { lowerSamplingRate() }
        return comparedHit
    }

    private mutating func recordDisagreements(comparedHit: UInt64, weight: Double) {
        let count = comparedCount
        guard count > 1, comparedHit != 0, comparedHit != (1 << UInt64(count)) - 1 else { return }
        let hit = { (index: Int) in comparedHit & (1 << UInt64(index)) != 0 }
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

    private mutating func resetFigures() {
        hits = Array(repeating: 0, count: simulations.count)
        disagreements = Array(repeating: Disagreement(), count: comparedCount * comparedCount)
        requests = 0
        expectedRequests = 0
        requestCount = 0
    }

    /// A simulation's measure of the goal over the recent window, corrected as SHARDS-adj
    /// does: the sampled weight beyond (or short of) what the rate leads to expect is taken
    /// off (or added to) the hits, since a sample's excess comes from its most popular names.
    func adjustedRatio(_ index: Int) -> Double {
        guard expectedRequests > 0 else { return 0 }
        let excess = requests - expectedRequests
        return min(1, max(0, (hits[index] - excess) / expectedRequests))
    }

    /// The requests two compared simulations disagreed on, over the window.
    func disagreement(_ first: Int, _ second: Int) -> Disagreement {
        disagreements[min(first, second) * comparedCount + max(first, second)]
    }

    /// Names the bounded simulation holds.
    var namesHeld: Int { simulations[boundedIndex].residentCount }

    var memoryBytes: Int {
        var total = MemoryBytes.of(simulations) + MemoryBytes.of(hits) + MemoryBytes.of(disagreements)
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
