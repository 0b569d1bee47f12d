/// SIEVE (Zhang et al., NSDI '24): one FIFO, a visited bit per object, and a hand that
/// walks from the oldest object towards the newest. New objects enter at the newest end; a
/// read sets the bit and moves nothing. The hand clears the bits it passes and evicts the
/// first object whose bit is clear; it stays where it stopped for the next eviction and
/// wraps round to the oldest end.
public struct SIEVEPolicy: ReplacementPolicy {
    private var list = ResidentList()
    /// The next object the hand looks at; `none` starts from the oldest end.
    private var hand = ResidentList.none

    public init() {}

    public var count: Int { list.count }

    public var residentBytes: Int64 { list.bytes }

    public var memoryBytes: Int { list.memoryBytes }

    public func contains(_ key: CacheKey) -> Bool { list.slot(of: key) != nil }

    public func fingerprint(of key: CacheKey) -> UInt64? { list.slot(of: key).map { list[$0].fingerprint } }

    public func size(of key: CacheKey) -> Int64? { list.slot(of: key).map { list[$0].size } }

    public mutating func insert(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        if let slot = list.slot(of: key) {
            list.setMark(1, at: slot)
        } else {
            list.appendNewest(key, fingerprint: fingerprint, size: size)
        }
    }

    public mutating func restore(_ key: CacheKey, fingerprint: UInt64, size: Int64, cost: Double) {
        guard list.slot(of: key) == nil else { return }
        list.appendNewest(key, fingerprint: fingerprint, size: size)
    }

    public mutating func reserveCapacity(_ residents: Int) { list.reserveCapacity(residents) }

    public mutating func resize(_ key: CacheKey, size: Int64, cost: Double) {
        if let slot = list.slot(of: key) { list.resize(slot, to: size) }
    }

    public mutating func access(_ key: CacheKey) {
        if let slot = list.slot(of: key) { list.setMark(1, at: slot) }
    }

    public mutating func remove(_ key: CacheKey) {
        guard let slot = list.slot(of: key) else { return }
        if slot == hand { hand = list[slot].next }
        list.remove(slot)
    }

    /// Ineligible objects are passed like visited ones (their bit is left as it is).
    public mutating func evict(isEligible: (CacheKey) -> Bool) -> CacheKey? {
        // Two full turns: the first may only clear bits.
        var budget = 2 * list.count + 1
        var slot = hand == ResidentList.none ? list.oldest : hand
        while budget > 0, list.count > 0 {
            budget -= 1
            if slot == ResidentList.none { slot = list.oldest }
            let node = list[slot]
            if !isEligible(node.key) {
                slot = node.next
                continue
            }
            if node.mark != 0 {
                list.setMark(0, at: slot)
                slot = node.next
                continue
            }
            hand = node.next
            list.remove(slot)
            return node.key
        }
        hand = slot
        return nil
    }
}
