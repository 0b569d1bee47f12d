/// One of the policies, chosen at run time (a pool's `user.cache.eviction`), with the same
/// operations; a copy is a snapshot.
///
/// A struct holding the one policy in use as an optional, rather than an enum with payloads:
/// `policy!.change()` changes the policy in place, where taking an enum's payload out keeps a
/// second reference alive for the switch and copies every array of it at each change.
public struct AnyReplacementPolicy: Sendable {
    public let kind: PolicyKind
    /// What a miss costs for the pool (only `tinylfu` decides by it; GDSF weighs each
    /// object by the cost it is given).
    public let goal: CacheGoal
    private var lru: LRUPolicy?
    private var s3fifo: S3FIFOPolicy?
    private var sieve: SIEVEPolicy?
    private var tinylfu: WTinyLFUPolicy?
    private var gdsf: GDSFPolicy?

    public init(kind: PolicyKind, goal: CacheGoal) {
        self.kind = kind
        self.goal = goal
        switch kind {
        case .lru: lru = LRUPolicy()
        case .s3fifo: s3fifo = S3FIFOPolicy()
        case .sieve: sieve = SIEVEPolicy()
        case .tinylfu: tinylfu = WTinyLFUPolicy(goal: goal)
        case .gdsf: gdsf = GDSFPolicy()
        case .gdsfFiles: gdsf = GDSFPolicy(weighsEveryFileAlike: true)
        }
    }

    private var policy: any ReplacementPolicy {
        switch kind {
        case .lru: return lru!
        case .s3fifo: return s3fifo!
        case .sieve: return sieve!
        case .tinylfu: return tinylfu!
        case .gdsf, .gdsfFiles: return gdsf!
        }
    }

    public var count: Int {
        switch kind {
        case .lru: return lru!.count
        case .s3fifo: return s3fifo!.count
        case .sieve: return sieve!.count
        case .tinylfu: return tinylfu!.count
        case .gdsf, .gdsfFiles: return gdsf!.count
        }
    }

    public var residentBytes: Int64 { policy.residentBytes }

    /// See ``ReplacementPolicy/memoryBytes``.
    public var memoryBytes: Int { policy.memoryBytes }

    /// What a policy built from a known count of residents reserves (`reserveCapacity`): an
    /// eighth more, since a pool at its limit goes a little above it between evictions.
    public static func reservation(forResidents residents: Int) -> Int { residents + residents / 8 }

    public func contains(_ key: CacheKey) -> Bool {
        switch kind {
        case .lru: return lru!.contains(key)
        case .s3fifo: return s3fifo!.contains(key)
        case .sieve: return sieve!.contains(key)
        case .tinylfu: return tinylfu!.contains(key)
        case .gdsf, .gdsfFiles: return gdsf!.contains(key)
        }
    }

    public func fingerprint(of key: CacheKey) -> UInt64? { policy.fingerprint(of: key) }

    /// Whether `fingerprint(of:)` answers for residents: every policy but GDSF, which keeps none.
    public var fingerprintsKept: Bool { gdsf == nil }

    public func size(of key: CacheKey) -> Int64? { policy.size(of: key) }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        switch kind {
        case .lru: lru!.insert(key, fingerprint: fingerprint, size: size, cost: cost)
        case .s3fifo: s3fifo!.insert(key, fingerprint: fingerprint, size: size, cost: cost)
        case .sieve: sieve!.insert(key, fingerprint: fingerprint, size: size, cost: cost)
        case .tinylfu: tinylfu!.insert(key, fingerprint: fingerprint, size: size, cost: cost)
        case .gdsf, .gdsfFiles: gdsf!.insert(key, fingerprint: fingerprint, size: size, cost: cost)
        }
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        switch kind {
        case .lru: lru!.restore(key, fingerprint: fingerprint, size: size, cost: cost)
        case .s3fifo: s3fifo!.restore(key, fingerprint: fingerprint, size: size, cost: cost)
        case .sieve: sieve!.restore(key, fingerprint: fingerprint, size: size, cost: cost)
        case .tinylfu: tinylfu!.restore(key, fingerprint: fingerprint, size: size, cost: cost)
        case .gdsf, .gdsfFiles: gdsf!.restore(key, fingerprint: fingerprint, size: size, cost: cost)
        }
    }

    public mutating func reserveCapacity(_ residents: Int) {
        switch kind {
        case .lru: lru!.reserveCapacity(residents)
        case .s3fifo: s3fifo!.reserveCapacity(residents)
        case .sieve: sieve!.reserveCapacity(residents)
        case .tinylfu: tinylfu!.reserveCapacity(residents)
        case .gdsf, .gdsfFiles: gdsf!.reserveCapacity(residents)
        }
    }

    public mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
        switch kind {
        case .lru: lru!.resize(key, size: size, cost: cost)
        case .s3fifo: s3fifo!.resize(key, size: size, cost: cost)
        case .sieve: sieve!.resize(key, size: size, cost: cost)
        case .tinylfu: tinylfu!.resize(key, size: size, cost: cost)
        case .gdsf, .gdsfFiles: gdsf!.resize(key, size: size, cost: cost)
        }
    }

    public mutating func access(_ key: CacheKey) {
        switch kind {
        case .lru: lru!.access(key)
        case .s3fifo: s3fifo!.access(key)
        case .sieve: sieve!.access(key)
        case .tinylfu: tinylfu!.access(key)
        case .gdsf, .gdsfFiles: gdsf!.access(key)
        }
    }

    public mutating func remove(_ key: CacheKey) {
        switch kind {
        case .lru: lru!.remove(key)
        case .s3fifo: s3fifo!.remove(key)
        case .sieve: sieve!.remove(key)
        case .tinylfu: tinylfu!.remove(key)
        case .gdsf, .gdsfFiles: gdsf!.remove(key)
        }
    }

    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        switch kind {
        case .lru: return lru!.evict(isEligible: isEligible)
        case .s3fifo: return s3fifo!.evict(isEligible: isEligible)
        case .sieve: return sieve!.evict(isEligible: isEligible)
        case .tinylfu: return tinylfu!.evict(isEligible: isEligible)
        case .gdsf, .gdsfFiles: return gdsf!.evict(isEligible: isEligible)
        }
    }

    public mutating func evict() -> CacheKey? { evict(isEligible: { _ in true }) }

    /// The same residents under another policy, restored in this policy's eviction order
    /// (the next victim first), so what would have gone first still goes first (GDSF orders
    /// them by its priorities instead, the earlier first among equals). `cost` gives each
    /// resident's miss cost from its key and size (no policy but GDSF keeps it).
    public func converted(to kind: PolicyKind,
                          cost: (CacheKey, Int64) -> Double = { _, _ in 1 }) -> AnyReplacementPolicy {
        var draining = self
        var converted = AnyReplacementPolicy(kind: kind, goal: goal)
        var order: [(key: CacheKey, fingerprint: UInt64, size: Int64)] = []
        order.reserveCapacity(count)
        while let key = draining.evict() {
            order.append((key, fingerprint(of: key) ?? UInt64(bitPattern: key), size(of: key) ?? 0))
        }
        converted.reserveCapacity(order.count)
        for resident in order {
            converted.restore(resident.key, fingerprint: resident.fingerprint, size: resident.size,
                              cost: cost(resident.key, resident.size))
        }
        return converted
    }
}
