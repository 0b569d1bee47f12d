/// A pool's miniature simulations (Waldspurger et al., ATC '17): caches of the pool's size
/// times the sampling rate, fed only the pool's spatially sampled requests, one per
/// candidate policy, and one of the current policy at each what-if size. They say which
/// policy would have hit most lately (`auto`) and the hit ratio at other sizes (the curve),
/// in memory bounded by the sampler's key limit whatever the traffic.
public struct PolicyAdvisor: Sendable {
    /// The sizes of the what-if curve, as multiples of the pool's limit.
    public static let multipliers: [Double] = [0.125, 0.25, 0.5, 1, 2, 4, 8]
    /// Distinct sampled names at most: about 100 bytes of simulation each, across all the
    /// simulations, so under a megabyte per pool.
    static let maxSampledKeys = 8_192
    /// Hits and requests halve every this many sampled requests: the figures follow the
    /// pool's recent reads (a few cache-fulls), not its whole history.
    static let decayPeriod = 8_192
    /// Sampled requests between two looks at which policy leads, and how many looks in a
    /// row another one must lead by `switchMargin` before `auto` switches: it never flaps
    /// on noise.
    static let checkPeriod = 256
    static let checksToSwitch = 3
    static let switchMargin = 0.01
    /// Sampled requests before a curve or a recommendation is given at all.
    static let minimumRequests = 256

    public private(set) var current: PolicyKind
    public let candidates: [PolicyKind]
    private var capacityBytes: Int64
    private var capacityFiles: Int64
    private var sampler = SpatialSampler(maxKeys: PolicyAdvisor.maxSampledKeys)
    /// One simulation per candidate at the pool's size.
    private var bySize: [PolicyKind: Int] = [:]
    private var simulations: [CacheSimulator] = []
    /// The current policy's simulation at each of `multipliers`.
    private var curveSimulations: [Int] = []
    private var hits: [Double] = []
    private var requests = 0.0
    public private(set) var sampledRequests = 0
    private var sinceCheck = 0
    private var leadingStreak: (kind: PolicyKind, checks: Int)?

    public init(current: PolicyKind, candidates: [PolicyKind] = PolicyKind.allCases, capacityBytes: Int64,
                capacityFiles: Int64) {
        self.current = current
        self.candidates = candidates
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
            simulations.append(CacheSimulator(kind: kind, capacity: scaled(1), countsObjects: countsObjects))
        }
        curveSimulations = Self.multipliers.map { multiplier in
            if multiplier == 1, let index = bySize[current] { return index }
            simulations.append(CacheSimulator(kind: current, capacity: scaled(multiplier), countsObjects: countsObjects))
            return simulations.count - 1
        }
        hits = Array(repeating: 0, count: simulations.count)
        requests = 0
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

    /// The pool now runs `kind`: the curve's simulations run it too, from empty.
    public mutating func setCurrent(_ kind: PolicyKind) {
        guard kind != current else { return }
        current = kind
        let kept = bySize.mapValues { simulations[$0] }
        let keptHits = bySize.mapValues { hits[$0] }
        let keptRequests = requests
        rebuild()
        for (kind, index) in bySize {
            if let simulation = kept[kind] { simulations[index] = simulation }
            hits[index] = keptHits[kind] ?? 0
        }
        requests = keptRequests
    }

    /// A request of the pool's (a hit, or a miss about to be inserted). Unsampled requests
    /// cost a hash and a compare.
    public mutating func record(fingerprint: UInt64, size: Int64) {
        guard capacity > 0 else { return }
        var dropped: [UInt64] = []
        let rateBefore = sampler.rate
        guard sampler.sample(fingerprint, dropped: { dropped.append($0) }) || !dropped.isEmpty else { return }
        if !dropped.isEmpty {
            for index in simulations.indices {
                for key in dropped { simulations[index].delete(Int64(bitPattern: key)) }
            }
            let shrink = sampler.rate / rateBefore
            for index in simulations.indices {
                simulations[index].resize(to: max(1, Int64((Double(simulations[index].capacity) * shrink).rounded())))
            }
        }
        guard SpatialSampler.position(fingerprint) < sampler.threshold else { return }
        let key = Int64(bitPattern: fingerprint)
        for index in simulations.indices where simulations[index].get(key, size: size) { hits[index] += 1 }
        requests += 1
        sampledRequests += 1
        sinceCheck += 1
        if sampledRequests % Self.decayPeriod == 0 {
            requests /= 2
            for index in hits.indices { hits[index] /= 2 }
        }
    }

    /// Each candidate's hit ratio over the recent sampled requests.
    public func hitRatios() -> [PolicyKind: Double] {
        guard requests > 0 else { return [:] }
        return bySize.mapValues { hits[$0] / requests }
    }

    /// A policy to switch to, when another has led the current one by `switchMargin` for
    /// `checksToSwitch` looks in a row; nil otherwise. Called by the evictor's rounds.
    public mutating func recommendation() -> (kind: PolicyKind, ratios: [PolicyKind: Double])? {
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
        return (best, ratios)
    }

    /// The estimated hit ratio of the current policy at each what-if size; empty until
    /// enough requests were sampled.
    public func curve() -> [(multiplier: Double, sizeBytes: Int64, sizeFiles: Int64, hitRatio: Double)] {
        guard sampledRequests >= Self.minimumRequests, requests > 0 else { return [] }
        return zip(Self.multipliers, curveSimulations).map { multiplier, index in
            (multiplier,
             countsObjects ? 0 : Int64((Double(capacityBytes) * multiplier).rounded()),
             countsObjects ? Int64((Double(capacityFiles) * multiplier).rounded()) : 0,
             hits[index] / requests)
        }
    }

    /// The sampling rate now (1 until the pool has seen more than `maxSampledKeys` names).
    public var samplingRate: Double { sampler.rate }
}
