/// One of the policies, chosen at run time (a pool's `user.cache.eviction`), with the same
/// operations; a copy is a snapshot. Each operation reaches the policy in place, never
/// through a copy of its storage.
public enum AnyReplacementPolicy: Sendable {
    case lru(LRUPolicy)
    case s3fifo(S3FIFOPolicy)
    case sieve(SIEVEPolicy)
    case tinylfu(WTinyLFUPolicy)

    public init(kind: PolicyKind) {
        switch kind {
        case .lru: self = .lru(LRUPolicy())
        case .s3fifo: self = .s3fifo(S3FIFOPolicy())
        case .sieve: self = .sieve(SIEVEPolicy())
        case .tinylfu: self = .tinylfu(WTinyLFUPolicy())
        }
    }

    public var kind: PolicyKind {
        switch self {
        case .lru: return .lru
        case .s3fifo: return .s3fifo
        case .sieve: return .sieve
        case .tinylfu: return .tinylfu
        }
    }

    private var policy: any ReplacementPolicy {
        switch self {
        case .lru(let policy): return policy
        case .s3fifo(let policy): return policy
        case .sieve(let policy): return policy
        case .tinylfu(let policy): return policy
        }
    }

    public var count: Int { policy.count }

    public func contains(_ key: CacheKey) -> Bool { policy.contains(key) }

    public func fingerprint(of key: CacheKey) -> UInt64? { policy.fingerprint(of: key) }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64) {
        apply(Insert(key: key, fingerprint: fingerprint, restoring: false))
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64) {
        apply(Insert(key: key, fingerprint: fingerprint, restoring: true))
    }

    public mutating func access(_ key: CacheKey) { apply(Access(key: key)) }

    public mutating func remove(_ key: CacheKey) { apply(Remove(key: key)) }

    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        withoutActuallyEscaping(isEligible) { isEligible in apply(Evict(isEligible: isEligible)) }
    }

    public mutating func evict() -> CacheKey? { evict(isEligible: { _ in true }) }

    /// The same residents under another policy, restored in this policy's eviction order
    /// (the next victim first), so what would have gone first still goes first.
    public func converted(to kind: PolicyKind) -> AnyReplacementPolicy {
        var draining = self
        var converted = AnyReplacementPolicy(kind: kind)
        var order: [(CacheKey, UInt64)] = []
        order.reserveCapacity(count)
        while let key = draining.evict() {
            order.append((key, fingerprint(of: key) ?? UInt64(bitPattern: key)))
        }
        for (key, fingerprint) in order { converted.restore(key, fingerprint: fingerprint) }
        return converted
    }

    // MARK: - Reaching the policy in place

    private protocol Operation {
        associatedtype Result
        func run<Policy: ReplacementPolicy>(on policy: inout Policy) -> Result
    }

    private struct Insert: Operation {
        let key: CacheKey
        let fingerprint: UInt64
        let restoring: Bool
        func run<Policy: ReplacementPolicy>(on policy: inout Policy) {
            if restoring { policy.restore(key, fingerprint: fingerprint) } else { policy.insert(key, fingerprint: fingerprint) }
        }
    }

    private struct Access: Operation {
        let key: CacheKey
        func run<Policy: ReplacementPolicy>(on policy: inout Policy) { policy.access(key) }
    }

    private struct Remove: Operation {
        let key: CacheKey
        func run<Policy: ReplacementPolicy>(on policy: inout Policy) { policy.remove(key) }
    }

    private struct Evict: Operation {
        let isEligible: (CacheKey) -> Bool
        func run<Policy: ReplacementPolicy>(on policy: inout Policy) -> CacheKey? { policy.evict(isEligible: isEligible) }
    }

    /// The payload is taken out (`self` holds an empty LRU meanwhile), so the policy's arrays
    /// have one owner and change in place.
    private mutating func apply<Op: Operation>(_ operation: Op) -> Op.Result {
        switch self {
        case .lru(var policy):
            self = .lru(LRUPolicy())
            defer { self = .lru(policy) }
            return operation.run(on: &policy)
        case .s3fifo(var policy):
            self = .lru(LRUPolicy())
            defer { self = .s3fifo(policy) }
            return operation.run(on: &policy)
        case .sieve(var policy):
            self = .lru(LRUPolicy())
            defer { self = .sieve(policy) }
            return operation.run(on: &policy)
        case .tinylfu(var policy):
            self = .lru(LRUPolicy())
            defer { self = .tinylfu(policy) }
            return operation.run(on: &policy)
        }
    }
}
