/// A cache of a given capacity run by a policy over a stream of requests: what `cachefs
/// replay` and the miniature simulations measure. A request for an object not resident is a
/// miss and inserts it (unless it alone is larger than the capacity); then victims go until
/// the cache is within its capacity again, as the evictor does for a pool.
///
/// Each request may carry a cost (milliseconds): the figures add up what was missed and
/// hit, and a size- and cost-aware policy weighs objects by the goal's cost.
public struct CacheSimulator: Sendable {
    /// Bytes, or objects when `countsObjects` (a pool limited by `max_files`).
    public private(set) var capacity: Int64
    public let countsObjects: Bool
    public let goal: CacheGoal
    public private(set) var policy: AnyReplacementPolicy
    private var sizes = KeyMap<Int64>()
    /// Each resident's measured cost (a `Double`'s bits), kept for the `cost` goal only: a
    /// switch of policy hands it on.
    private var costs = KeyMap<UInt64>()
    public private(set) var used: Int64 = 0
    public private(set) var figures = HitFigures()
    /// What a miss keeps: by default everything; a miss not admitted is served, not kept.
    /// `after` counts a key's misses over the whole trace (a trace has no clock, so a pool's
    /// `admit_window` has no equivalent here).
    public var admission = AdmissionRule.everything
    private var misses = KeyMap<Int64>()

    public init(kind: PolicyKind, capacity: Int64, countsObjects: Bool = false, goal: CacheGoal = .files) {
        policy = AnyReplacementPolicy(kind: kind, goal: goal)
        self.capacity = capacity
        self.countsObjects = countsObjects
        self.goal = goal
    }

    /// What an object takes of the capacity.
    private func occupancy(_ size: Int64) -> Int64 { countsObjects ? 1 : size }

    /// A read of `key`: true on a hit.
    @discardableResult
    public mutating func get(_ key: CacheKey, size: Int64, cost: Double = 0) -> Bool {
        if let stored = sizes[key] {
            policy.access(key)
            figures.record(hit: true, size: stored, cost: cost)
            // A size first known as an estimate (a file created empty) is corrected here.
            if size != stored && size > 0 {
                change(key, from: stored, to: size, cost: cost)
            }
            return true
        }
        figures.record(hit: false, size: size, cost: cost)
        if admits(key, size: size) { admit(key, size: size, cost: cost) }
        return false
    }

    /// Whether a miss of `key` keeps it, counting the miss for `after`.
    private mutating func admits(_ key: CacheKey, size: Int64) -> Bool {
        guard admission != .everything else { return true }
        guard admission.admits(size: size) else { return false }
        guard admission.after > 1 else { return true }
        let count = (misses[key] ?? 0) + 1
        guard count >= admission.after else {
            misses[key] = count
            return false
        }
        misses[key] = nil
        return true
    }

    /// A write of `key` (a new version): resident, with its new size; not a request.
    public mutating func set(_ key: CacheKey, size: Int64, cost: Double = 0) {
        if let stored = sizes[key] {
            policy.access(key)
            change(key, from: stored, to: size, cost: cost)
        } else {
            admit(key, size: size, cost: cost)
        }
    }

    private mutating func change(_ key: CacheKey, from stored: Int64, to size: Int64, cost: Double) {
        sizes[key] = size
        if goal == .cost { costs[key] = cost.bitPattern }
        used += occupancy(size) - occupancy(stored)
        policy.resize(key, size: occupancy(size), cost: goal.cost(size: size, measured: cost))
        shrink()
    }

    public mutating func delete(_ key: CacheKey) {
        guard let stored = sizes.removeValue(forKey: key) else { return }
        costs[key] = nil
        used -= occupancy(stored)
        policy.remove(key)
    }

    public func contains(_ key: CacheKey) -> Bool { sizes[key] != nil }

    public var residentCount: Int { sizes.count }

    /// Its policy's `memoryBytes` and its size and cost maps' storage (the struct's own
    /// fields are counted by whoever holds it).
    public var memoryBytes: Int { policy.memoryBytes + sizes.memoryBytes + costs.memoryBytes }

    /// Forgets every resident object `shouldRemove` names (no longer sampled).
    public mutating func removeAll(where shouldRemove: (CacheKey) -> Bool) {
        for key in sizes.allKeys where shouldRemove(key) { delete(key) }
    }

    /// Counts from zero again, the cache as it is (to measure a warm cache).
    public mutating func resetFigures() {
        figures = HitFigures()
    }

    /// A new capacity; the cache sheds what no longer fits.
    public mutating func resize(to capacity: Int64) {
        self.capacity = capacity
        shrink()
    }

    /// Another policy over the same residents (`auto` switching).
    public mutating func switchPolicy(to kind: PolicyKind) {
        guard kind != policy.kind else { return }
        let goal = goal
        let sizes = sizes
        let costs = costs
        policy = policy.converted(to: kind) { key, _ in
            goal.cost(size: sizes[key] ?? 0, measured: costs[key].map { Double(bitPattern: $0) } ?? 0)
        }
    }

    private mutating func admit(_ key: CacheKey, size: Int64, cost: Double) {
        guard occupancy(size) <= capacity else { return }
        sizes[key] = size
        if goal == .cost { costs[key] = cost.bitPattern }
        used += occupancy(size)
        policy.insert(key, fingerprint: UInt64(bitPattern: key), size: occupancy(size),
                      cost: goal.cost(size: size, measured: cost))
        shrink()
    }

    private mutating func shrink() {
        while used > capacity, let victim = policy.evict() {
            // Removed first: `occupancy(sizes.removeValue(…))` would read `self` while
            // `sizes` changes, and copy the whole map each time.
            let removed = sizes.removeValue(forKey: victim) ?? 0
            costs[victim] = nil
            used -= occupancy(removed)
        }
    }
}

/// Hits against requests, counted in objects, in bytes and in cost (what the hits saved).
public struct HitFigures: Sendable, Equatable {
    public private(set) var requests: Int64 = 0
    public private(set) var hits: Int64 = 0
    public private(set) var requestedBytes: Int64 = 0
    public private(set) var hitBytes: Int64 = 0
    /// The costs of every request, and of the hits: what a cache saved of what it could.
    public private(set) var requestedCost: Double = 0
    public private(set) var hitCost: Double = 0

    public init() {}

    public init(requests: Int64, hits: Int64, requestedBytes: Int64, hitBytes: Int64, requestedCost: Double = 0,
                hitCost: Double = 0) {
        self.requests = requests
        self.hits = hits
        self.requestedBytes = requestedBytes
        self.hitBytes = hitBytes
        self.requestedCost = requestedCost
        self.hitCost = hitCost
    }

    public mutating func record(hit: Bool, size: Int64, cost: Double = 0) {
        requests += 1
        requestedBytes += size
        requestedCost += cost
        if hit {
            hits += 1
            hitBytes += size
            hitCost += cost
        }
    }

    public var objectHitRatio: Double { requests > 0 ? Double(hits) / Double(requests) : 0 }
    public var byteHitRatio: Double { requestedBytes > 0 ? Double(hitBytes) / Double(requestedBytes) : 0 }
    /// The share of the requests' cost the hits saved.
    public var costSavedRatio: Double { requestedCost > 0 ? hitCost / requestedCost : 0 }

    /// The goal's measure: object, byte or cost hit ratio.
    public func ratio(for goal: CacheGoal) -> Double {
        switch goal {
        case .files: return objectHitRatio
        case .bytes: return byteHitRatio
        case .cost: return costSavedRatio
        }
    }
}
