import DequeModule

/// What a policy's storage holds, for ``ReplacementPolicy/memoryBytes``: each buffer's
/// capacity (what it allocated, spare room included) times its element's stride. Not the
/// allocator's headers, nor the policy's own inline fields. O(1), allocates nothing.
enum MemoryBytes {
    static func of<Element>(_ array: [Element]) -> Int {
        array.capacity * MemoryLayout<Element>.stride
    }

    /// A `Deque`'s capacity is not public (swift-collections keeps it to its own package), so
    /// a deque counts its elements: at least what it holds, short of its spare room.
    static func of<Element>(_ deque: Deque<Element>) -> Int {
        deque.count * MemoryLayout<Element>.stride
    }

    /// A native `Dictionary` allocates a power of two of buckets, at most three quarters of
    /// them usable (its `capacity`): a key and a value per bucket and a bit of occupancy.
    static func of<Key, Value>(_ dictionary: [Key: Value]) -> Int {
        let capacity = dictionary.capacity
        guard capacity > 0 else { return 0 }
        var buckets = 1
        while buckets * 3 / 4 < capacity { buckets *= 2 }
        let bitmapBytes = (buckets + 63) / 64 * MemoryLayout<UInt>.stride
        return buckets * (MemoryLayout<Key>.stride + MemoryLayout<Value>.stride) + bitmapBytes
    }
}
