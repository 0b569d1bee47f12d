/// What a `SlotIndex` indexes: an array element that knows its key.
protocol KeyedSlot {
    var key: CacheKey { get }
}

/// An open-addressing index from key to a slot of an array the owner keeps (a policy's
/// nodes or entries): linear probing, backward-shift deletion, and a multiplicative hash
/// (keys are entry ids or already-mixed fingerprints) mapped onto any number of buckets by a
/// multiply and shift, so the index grows by half rather than doubling and stays between
/// half and three quarters full (a power of two left it between three eighths and three
/// quarters: up to 10.7 bytes a resident where 8 do). It holds slots only, 4 bytes a bucket;
/// a lookup compares the key in the owner's element. Each call is given the owner's array,
/// which must hold the key of every slot indexed.
struct SlotIndex: Sendable {
    static let none: Int32 = -1

    /// Slots, `none` for an empty bucket.
    private var buckets: [Int32] = []
    private(set) var count = 0

    /// Its buckets' bytes (see ``ReplacementPolicy/memoryBytes``).
    var memoryBytes: Int { MemoryBytes.of(buckets) }

    private func home(_ key: CacheKey) -> Int {
        let mixed = (UInt64(bitPattern: key) &* 0x9e37_79b9_7f4a_7c15) >> 32
        return Int(truncatingIfNeeded: (mixed &* UInt64(buckets.count)) >> 32)
    }

    private func next(_ bucket: Int) -> Int { bucket + 1 == buckets.count ? 0 : bucket + 1 }

    /// How far along the probe run from `start` the bucket is.
    private func distance(from start: Int, to bucket: Int) -> Int {
        bucket >= start ? bucket - start : bucket + buckets.count - start
    }

    func slot<Element: KeyedSlot>(of key: CacheKey, in elements: [Element]) -> Int32? {
        guard count > 0 else { return nil }
        var bucket = home(key)
        while buckets[bucket] != Self.none {
            let slot = buckets[bucket]
            if elements[Int(slot)].key == key { return slot }
            bucket = next(bucket)
        }
        return nil
    }

    /// Indexes a slot whose key is not indexed yet.
    mutating func insert<Element: KeyedSlot>(_ slot: Int32, in elements: [Element]) {
        if (count + 1) * 4 > buckets.count * 3 { grow(elements) }
        place(slot, key: elements[Int(slot)].key)
        count += 1
    }

    private mutating func place(_ slot: Int32, key: CacheKey) {
        var bucket = home(key)
        while buckets[bucket] != Self.none { bucket = next(bucket) }
        buckets[bucket] = slot
    }

    /// Forgets an indexed slot (its element must still hold its key). Later entries of the
    /// probe run move into the hole, so no tombstones pile up.
    mutating func remove<Element: KeyedSlot>(_ slot: Int32, in elements: [Element]) {
        var hole = home(elements[Int(slot)].key)
        while buckets[hole] != slot { hole = next(hole) }
        var bucket = next(hole)
        while buckets[bucket] != Self.none {
            let start = home(elements[Int(buckets[bucket])].key)
            if distance(from: start, to: bucket) >= distance(from: hole, to: bucket) {
                buckets[hole] = buckets[bucket]
                hole = bucket
            }
            bucket = next(bucket)
        }
        buckets[hole] = Self.none
        count -= 1
    }

    /// Room for `residents` slots without growing: one allocation where growing one slot at a
    /// time would leave every smaller table behind as garbage in the allocator.
    mutating func reserveCapacity<Element: KeyedSlot>(_ residents: Int, in elements: [Element]) {
        let size = max(Self.minimumBuckets, (residents * 4 + 2) / 3)
        if size > buckets.count { rehash(into: size, elements) }
    }

    private static let minimumBuckets = 16

    private mutating func grow<Element: KeyedSlot>(_ elements: [Element]) {
        rehash(into: max(Self.minimumBuckets, buckets.count * 3 / 2), elements)
    }

    private mutating func rehash<Element: KeyedSlot>(into size: Int, _ elements: [Element]) {
        let old = buckets
        buckets = Array(repeating: Self.none, count: size)
        for slot in old where slot != Self.none { place(slot, key: elements[Int(slot)].key) }
    }
}
