/// Least recently used: a read moves the object to the newest end; victims leave from the
/// oldest. The default of every pool (the engine keeps its order in the index instead; this
/// is the same policy for simulations and `auto`).
public struct LRUPolicy: ReplacementPolicy {
    private var list = ResidentList()

    public init() {}

    public var count: Int { list.count }

    public var residentBytes: Int64 { list.bytes }

    public var memoryBytes: Int { list.memoryBytes }

    public func contains(_ key: CacheKey) -> Bool { list.slot(of: key) != nil }

    public func fingerprint(of key: CacheKey) -> UInt64? { list.slot(of: key).map { list[$0].fingerprint } }

    public func size(of key: CacheKey) -> Int64? { list.slot(of: key).map { list[$0].size } }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        if let slot = list.slot(of: key) {
            list.moveToNewest(slot)
        } else {
            list.appendNewest(key, fingerprint: fingerprint, size: size)
        }
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        insert(key, fingerprint: fingerprint, size: size, cost: cost)
    }

    public mutating func reserveCapacity(_ residents: Int) { list.reserveCapacity(residents) }

    public mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
        if let slot = list.slot(of: key) { list.resize(slot, to: size) }
    }

    public mutating func access(_ key: CacheKey) {
        if let slot = list.slot(of: key) { list.moveToNewest(slot) }
    }

    public mutating func remove(_ key: CacheKey) {
        if let slot = list.slot(of: key) { list.remove(slot) }
    }

    /// Walks from the oldest end past ineligible objects, which keep their place.
    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        var slot = list.oldest
        while slot != ResidentList.none {
            let node = list[slot]
            if isEligible(node.key) {
                list.remove(slot)
                return node.key
            }
            slot = node.next
        }
        return nil
    }
}
