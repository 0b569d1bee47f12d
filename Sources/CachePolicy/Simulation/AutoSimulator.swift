/// A cache run as an `auto` pool runs: a policy chosen by a ``PolicyAdvisor`` fed the same
/// requests and scoring by the same goal, switched (residents carried over) when the advisor
/// recommends another, looked at every `checkEvery` requests as the evictor's rounds look.
public struct AutoSimulator: Sendable {
    static let checkEvery = 256

    public private(set) var cache: CacheSimulator
    private var advisor: PolicyAdvisor
    private var sinceCheck = 0
    public private(set) var switches: [(afterRequests: Int64, to: PolicyKind)] = []
    /// What each switch was decided on (the goal and every candidate's figure), in order.
    public private(set) var recommendations: [PolicyRecommendation] = []

    public init(capacity: Int64, countsObjects: Bool = false, goal: CacheGoal = .files,
                startingWith kind: PolicyKind = PolicyAdvisor.autoStart, admission: AdmissionRule = .everything) {
        cache = CacheSimulator(kind: kind, capacity: capacity, countsObjects: countsObjects, goal: goal)
        cache.admission = admission
        advisor = PolicyAdvisor(current: kind, goal: goal, capacityBytes: countsObjects ? 0 : capacity,
                                capacityFiles: countsObjects ? capacity : 0)
    }

    @discardableResult
    public mutating func get(_ key: CacheKey, size: Int64, cost: Double = 0) -> Bool {
        advisor.record(fingerprint: UInt64(bitPattern: key), size: size, cost: cost)
        let hit = cache.get(key, size: size, cost: cost)
        sinceCheck += 1
        if sinceCheck >= Self.checkEvery {
            sinceCheck = 0
            if let recommended = advisor.recommendation() {
                cache.switchPolicy(to: recommended.kind)
                advisor.setCurrent(recommended.kind)
                switches.append((cache.figures.requests, recommended.kind))
                recommendations.append(recommended)
            }
        }
        return hit
    }

    public mutating func set(_ key: CacheKey, size: Int64, cost: Double = 0) { cache.set(key, size: size, cost: cost) }
    public mutating func resetFigures() { cache.resetFigures() }
    public mutating func delete(_ key: CacheKey) { cache.delete(key) }
}
