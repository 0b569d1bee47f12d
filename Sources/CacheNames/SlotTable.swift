import CacheModel
/// A hash table of slot numbers (positions in ``InodeTable``'s array): the key lives in the
/// inode, so a bucket keeps only the slot and what ``SlotBucket`` keeps of the key's hash, and
/// the caller confirms a match. Open addressing, linear probing, removals leave a tombstone
/// until the next rebuild. The table grows by half (not doubling: a hash maps onto any
/// capacity by a multiply and shift), so the load stays between 1/2 and 3/4 as it grows, 1/4
/// after many removals. (A `Dictionary` keyed by id or name cost 24 to 40 bytes a bucket.)
///
/// A rebuild homes every bucket again by its key's hash: a ``WideSlot`` has it stored, a
/// ``NarrowSlot`` asks `rehash` for its slot's.
struct SlotTable<Bucket: SlotBucket>: Sendable {
    private var buckets: [Bucket.Word] = []
    private(set) var count = 0
    private var tombstones = 0

    private static var minimumCapacity: Int { 8 }

    /// The first slot stored under `hash` for which `matches` is true.
    func first(hash: UInt32, where matches: (UInt32) -> Bool) -> UInt32? {
        guard !buckets.isEmpty else { return nil }
        var position = home(of: hash)
        while true {
            let bucket = buckets[position]
            if bucket == 0 { return nil }
            if bucket != Bucket.tombstone, Bucket.mayHold(bucket, hash: hash) {
                let slot = Bucket.slot(in: bucket)
                if matches(slot) { return slot }
            }
            position = next(after: position)
        }
    }

    /// Stores `slot` (at most `Bucket.largestSlot`) under `hash`.
    mutating func insert(_ slot: UInt32, hash: UInt32, rehash: (UInt32) -> UInt32) {
        precondition(slot <= Bucket.largestSlot, "slot \(slot) does not fit a \(Bucket.self)")
        if (count + tombstones + 1) * 4 > buckets.count * 3 { rebuild(for: count + 1, rehash: rehash) }
        var position = home(of: hash)
        while buckets[position] != 0 && buckets[position] != Bucket.tombstone {
            position = next(after: position)
        }
        if buckets[position] == Bucket.tombstone { tombstones -= 1 }
        buckets[position] = Bucket.bucket(slot: slot, hash: hash)
        count += 1
    }

    /// Rebuilds now, once, to hold `total` entries at the largest load (3/4) if that many would
    /// make the table grow: inserting them then rebuilds nothing, where growing by half as
    /// they came would copy it about 30 times on the way to a million.
    mutating func reserve(_ total: Int, rehash: (UInt32) -> UInt32) {
        guard (total + tombstones) * 4 > buckets.count * 3 else { return }
        rebuild(capacity: max(Self.minimumCapacity, (total * 4 + 2) / 3 + 1), rehash: rehash)
    }

    /// Takes `slot` stored under `hash` away; false if it is not there.
    @discardableResult
    mutating func remove(_ slot: UInt32, hash: UInt32, rehash: (UInt32) -> UInt32) -> Bool {
        guard !buckets.isEmpty else { return false }
        let wanted = Bucket.bucket(slot: slot, hash: hash)
        var position = home(of: hash)
        while buckets[position] != 0 {
            if buckets[position] == wanted {
                buckets[position] = Bucket.tombstone
                tombstones += 1
                count -= 1
                if count * 4 < buckets.count && buckets.count > Self.minimumCapacity {
                    rebuild(for: count, rehash: rehash)
                }
                return true
            }
            position = next(after: position)
        }
        return false
    }

    /// Every stored slot, in no particular order.
    var slots: [UInt32] {
        buckets.compactMap { $0 == 0 || $0 == Bucket.tombstone ? nil : Bucket.slot(in: $0) }
    }

    /// Bytes the buckets take (their capacity; a rebuild writes every one).
    var bucketBytes: Int { buckets.count * MemoryLayout<Bucket.Word>.stride }

    /// Moves every stored slot to `newSlot[slot]` (an inode table that was compacted, so no
    /// slot grows); each bucket keeps its hash, so nothing moves in the table.
    mutating func remapSlots(_ newSlot: [UInt32]) {
        for position in buckets.indices where buckets[position] != 0 && buckets[position] != Bucket.tombstone {
            let bucket = buckets[position]
            buckets[position] = Bucket.moving(bucket, to: newSlot[Int(Bucket.slot(in: bucket))])
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
    private mutating func rebuild(for needed: Int, rehash: (UInt32) -> UInt32) {
        rebuild(capacity: max(Self.minimumCapacity, needed * 2), rehash: rehash)
    }

    private mutating func rebuild(capacity: Int, rehash: (UInt32) -> UInt32) {
        let old = buckets
        buckets = Array(repeating: 0, count: capacity)
        tombstones = 0
        for bucket in old where bucket != 0 && bucket != Bucket.tombstone {
            var position = home(of: Bucket.hash(of: bucket, rehash: rehash))
            while buckets[position] != 0 { position = next(after: position) }
            buckets[position] = bucket
        }
    }
}

extension SlotTable where Bucket == WideSlot {
    /// A wide bucket keeps its hash, so a rebuild needs no rehash.
    mutating func insert(_ slot: UInt32, hash: UInt32) {
        insert(slot, hash: hash, rehash: WideSlot.storedHashOnly)
    }

    @discardableResult
    mutating func remove(_ slot: UInt32, hash: UInt32) -> Bool {
        remove(slot, hash: hash, rehash: WideSlot.storedHashOnly)
    }
}
