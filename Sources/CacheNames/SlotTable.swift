import CacheModel
/// A hash table of slot numbers (positions in ``InodeTable``'s array), 8 bytes a bucket: the
/// key lives in the inode, so the table keeps only a 32-bit hash of it and the slot, and the
/// caller confirms a match. Open addressing, linear probing, removals leave a tombstone until
/// the next rebuild. The table grows by half (not doubling: a hash maps onto any capacity by a
/// multiply and shift), so the load stays between 1/2 and 3/4 as it grows, 1/4 after many
/// removals. (A `Dictionary` keyed by id or name cost 24 to 40 bytes a bucket for the same.)
struct SlotTable: Sendable {
    /// Hash in the high 32 bits, slot + 1 in the low ones; 0 is an empty bucket.
    private var buckets: [UInt64] = []
    private(set) var count = 0
    private var tombstones = 0

    private static let tombstone = UInt64.max
    private static let minimumCapacity = 8

    /// The first slot stored under `hash` for which `matches` is true.
    func first(hash: UInt32, where matches: (UInt32) -> Bool) -> UInt32? {
        guard !buckets.isEmpty else { return nil }
        var position = home(of: hash)
        while true {
            let bucket = buckets[position]
            if bucket == 0 { return nil }
            if bucket != Self.tombstone, UInt32(truncatingIfNeeded: bucket >> 32) == hash {
                let slot = UInt32(truncatingIfNeeded: bucket) &- 1
                if matches(slot) { return slot }
            }
            position = next(after: position)
        }
    }

    mutating func insert(_ slot: UInt32, hash: UInt32) {
        if (count + tombstones + 1) * 4 > buckets.count * 3 { rebuild(for: count + 1) }
        var position = home(of: hash)
        while buckets[position] != 0 && buckets[position] != Self.tombstone {
            position = next(after: position)
        }
        if buckets[position] == Self.tombstone { tombstones -= 1 }
        buckets[position] = UInt64(hash) << 32 | UInt64(slot + 1)
        count += 1
    }

    /// Takes `slot` stored under `hash` away; false if it is not there.
    @discardableResult
    mutating func remove(_ slot: UInt32, hash: UInt32) -> Bool {
        guard !buckets.isEmpty else { return false }
        let wanted = UInt64(hash) << 32 | UInt64(slot + 1)
        var position = home(of: hash)
        while buckets[position] != 0 {
            if buckets[position] == wanted {
                buckets[position] = Self.tombstone
                tombstones += 1
                count -= 1
                if count * 4 < buckets.count && buckets.count > Self.minimumCapacity { rebuild(for: count) }
                return true
            }
            position = next(after: position)
        }
        return false
    }

    /// Every stored slot, in no particular order.
    var slots: [UInt32] {
        buckets.compactMap { $0 == 0 || $0 == Self.tombstone ? nil : UInt32(truncatingIfNeeded: $0) - 1 }
    }

    /// Moves every stored slot to `newSlot[slot]` (an inode table that was compacted); each
    /// bucket keeps its hash, so nothing moves in the table.
    mutating func remapSlots(_ newSlot: [UInt32]) {
        for position in buckets.indices where buckets[position] != 0 && buckets[position] != Self.tombstone {
            let slot = UInt32(truncatingIfNeeded: buckets[position]) - 1
            buckets[position] = buckets[position] & 0xFFFF_FFFF_0000_0000 | UInt64(newSlot[Int(slot)] + 1)
        }
    }

    /// The bucket a hash starts probing at: the hash scaled onto the capacity.
    private func home(of hash: UInt32) -> Int {
        Int((UInt64(hash) &* UInt64(buckets.count)) >> 32)
    }

    private func next(after position: Int) -> Int {
        position + 1 == buckets.count ? 0 : position + 1
    }

    /// Rebuilds for `needed` entries at a load of one half.
    private mutating func rebuild(for needed: Int) {
        let capacity = max(Self.minimumCapacity, needed * 2)
        let old = buckets
        buckets = Array(repeating: 0, count: capacity)
        tombstones = 0
        for bucket in old where bucket != 0 && bucket != Self.tombstone {
            var position = home(of: UInt32(truncatingIfNeeded: bucket >> 32))
            while buckets[position] != 0 { position = next(after: position) }
            buckets[position] = bucket
        }
    }
}
