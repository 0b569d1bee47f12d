/// A cache of a given capacity run by a policy over a stream of requests: what `cachefs
/// replay` and the miniature simulations measure. A request for an object not resident is a
/// miss and inserts it (unless it alone is larger than the capacity); then victims go until
/// the cache is within its capacity again, as the evictor does for a pool.
public struct CacheSimulator: Sendable {
    /// Bytes, or objects when `countsObjects` (a pool limited by `max_files`).
    public private(set) var capacity: Int64
    public let countsObjects: Bool
    public private(set) var policy: AnyReplacementPolicy
    private var sizes = KeyMap<Int64>()
    public private(set) var used: Int64 = 0
    public private(set) var figures = HitFigures()

    public init(kind: PolicyKind, capacity: Int64, countsObjects: Bool = false) {
        policy = AnyReplacementPolicy(kind: kind)
        self.capacity = capacity
        self.countsObjects = countsObjects
    }

    private func cost(_ size: Int64) -> Int64 { countsObjects ? 1 : size }

    /// A read of `key`: true on a hit.
    @discardableResult
    public mutating func get(_ key: CacheKey, size: Int64) -> Bool {
        if let stored = sizes[key] {
            policy.access(key)
            figures.record(hit: true, size: stored)
            // A size first known as an estimate (a file created empty) is corrected here.
            if size != stored && size > 0 {
                sizes[key] = size
                used += cost(size) - cost(stored)
                shrink()
            }
            return true
        }
        figures.record(hit: false, size: size)
        admit(key, size: size)
        return false
    }

    /// A write of `key` (a new version): resident, with its new size; not a request.
    public mutating func set(_ key: CacheKey, size: Int64) {
        if let stored = sizes[key] {
            used += cost(size) - cost(stored)
            sizes[key] = size
            policy.access(key)
            shrink()
        } else {
            admit(key, size: size)
        }
    }

    public mutating func delete(_ key: CacheKey) {
        guard let stored = sizes.removeValue(forKey: key) else { return }
        used -= cost(stored)
        policy.remove(key)
    }

    public func contains(_ key: CacheKey) -> Bool { sizes[key] != nil }

    public var residentCount: Int { sizes.count }

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
        policy = policy.converted(to: kind)
    }

    private mutating func admit(_ key: CacheKey, size: Int64) {
        guard cost(size) <= capacity else { return }
        sizes[key] = size
        used += cost(size)
        policy.insert(key, fingerprint: UInt64(bitPattern: key))
        shrink()
    }

    private mutating func shrink() {
        while used > capacity, let victim = policy.evict() {
            // Removed first: `cost(sizes.removeValue(…))` would read `self` for `cost` while
            // `sizes` changes, and copy the whole dictionary each time.
            let removed = sizes.removeValue(forKey: victim) ?? 0
            used -= cost(removed)
        }
    }
}

/// Hits against requests, counted in objects and in bytes.
public struct HitFigures: Sendable, Equatable {
    public private(set) var requests: Int64 = 0
    public private(set) var hits: Int64 = 0
    public private(set) var requestedBytes: Int64 = 0
    public private(set) var hitBytes: Int64 = 0

    public init() {}

    public mutating func record(hit: Bool, size: Int64) {
        requests += 1
        requestedBytes += size
        if hit {
            hits += 1
            hitBytes += size
        }
    }

    public var objectHitRatio: Double { requests > 0 ? Double(hits) / Double(requests) : 0 }
    public var byteHitRatio: Double { requestedBytes > 0 ? Double(hitBytes) / Double(requestedBytes) : 0 }
}
