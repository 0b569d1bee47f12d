/// One of the policies, chosen at run time (a pool's `user.cache.eviction`), with the same
/// operations; a copy is a snapshot.
///
/// A struct holding the one policy in use as an optional, rather than an enum with payloads:
/// `policy!.change()` changes the policy in place, where taking an enum's payload out keeps a
/// second reference alive for the switch and copies every array of it at each change.
public struct AnyReplacementPolicy: Sendable {
    public let kind: PolicyKind
    private var lru: LRUPolicy?
    private var s3fifo: S3FIFOPolicy?
    private var sieve: SIEVEPolicy?
    private var tinylfu: WTinyLFUPolicy?

    public init(kind: PolicyKind) {
        self.kind = kind
        switch kind {
        case .lru: lru = LRUPolicy()
        case .s3fifo: s3fifo = S3FIFOPolicy()
        case .sieve: sieve = SIEVEPolicy()
        case .tinylfu: tinylfu = WTinyLFUPolicy()
        }
    }

    private var policy: any ReplacementPolicy {
        switch kind {
        case .lru: return lru!
        case .s3fifo: return s3fifo!
        case .sieve: return sieve!
        case .tinylfu: return tinylfu!
        }
    }

    public var count: Int {
        switch kind {
        case .lru: return lru!.count
        case .s3fifo: return s3fifo!.count
        case .sieve: return sieve!.count
        case .tinylfu: return tinylfu!.count
        }
    }

    public func contains(_ key: CacheKey) -> Bool {
        switch kind {
        case .lru: return lru!.contains(key)
        case .s3fifo: return s3fifo!.contains(key)
        case .sieve: return sieve!.contains(key)
        case .tinylfu: return tinylfu!.contains(key)
        }
    }

    public func fingerprint(of key: CacheKey) -> UInt64? { policy.fingerprint(of: key) }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64) {
        switch kind {
        case .lru: lru!.insert(key, fingerprint: fingerprint)
        case .s3fifo: s3fifo!.insert(key, fingerprint: fingerprint)
        case .sieve: sieve!.insert(key, fingerprint: fingerprint)
        case .tinylfu: tinylfu!.insert(key, fingerprint: fingerprint)
        }
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64) {
        switch kind {
        case .lru: lru!.restore(key, fingerprint: fingerprint)
        case .s3fifo: s3fifo!.restore(key, fingerprint: fingerprint)
        case .sieve: sieve!.restore(key, fingerprint: fingerprint)
        case .tinylfu: tinylfu!.restore(key, fingerprint: fingerprint)
        }
    }

    public mutating func access(_ key: CacheKey) {
        switch kind {
        case .lru: lru!.access(key)
        case .s3fifo: s3fifo!.access(key)
        case .sieve: sieve!.access(key)
        case .tinylfu: tinylfu!.access(key)
        }
    }

    public mutating func remove(_ key: CacheKey) {
        switch kind {
        case .lru: lru!.remove(key)
        case .s3fifo: s3fifo!.remove(key)
        case .sieve: sieve!.remove(key)
        case .tinylfu: tinylfu!.remove(key)
        }
    }

    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        switch kind {
        case .lru: return lru!.evict(isEligible: isEligible)
        case .s3fifo: return s3fifo!.evict(isEligible: isEligible)
        case .sieve: return sieve!.evict(isEligible: isEligible)
        case .tinylfu: return tinylfu!.evict(isEligible: isEligible)
        }
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
}
