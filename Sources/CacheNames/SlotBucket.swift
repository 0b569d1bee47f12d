/// How a ``SlotTable`` bucket holds a slot and what it keeps of its key's 32-bit hash. The
/// word 0 is an empty bucket and ``tombstone`` a removed one; every stored bucket is neither.
protocol SlotBucket: Sendable {
    associatedtype Word: FixedWidthInteger & UnsignedInteger & Sendable

    static var tombstone: Word { get }
    /// The largest slot a bucket holds.
    static var largestSlot: UInt32 { get }
    static func bucket(slot: UInt32, hash: UInt32) -> Word
    static func slot(in bucket: Word) -> UInt32
    /// False when the bucket surely belongs to another hash; true when it may (the caller
    /// confirms against the key).
    static func mayHold(_ bucket: Word, hash: UInt32) -> Bool
    /// The hash the bucket was stored under: kept in it, or `rehash` of its slot.
    static func hash(of bucket: Word, rehash: (UInt32) -> UInt32) -> UInt32
    /// The same bucket for another slot (at most the one it holds).
    static func moving(_ bucket: Word, to slot: UInt32) -> Word
}

/// 8 bytes: the whole hash in the high 32 bits, slot + 1 in the low ones. For a table whose
/// keys cannot be hashed again from their slot (a directory's names: a hard-linked inode is
/// in it under a name that is not the inode's own).
enum WideSlot: SlotBucket {
    static let tombstone = UInt64.max
    static let largestSlot = UInt32.max - 2

    static func bucket(slot: UInt32, hash: UInt32) -> UInt64 { UInt64(hash) << 32 | UInt64(slot + 1) }
    static func slot(in bucket: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: bucket) &- 1 }
    static func mayHold(_ bucket: UInt64, hash: UInt32) -> Bool { UInt32(truncatingIfNeeded: bucket >> 32) == hash }
    static func hash(of bucket: UInt64, rehash: (UInt32) -> UInt32) -> UInt32 { UInt32(truncatingIfNeeded: bucket >> 32) }
    static func moving(_ bucket: UInt64, to slot: UInt32) -> UInt64 { bucket & 0xFFFF_FFFF_0000_0000 | UInt64(slot + 1) }

    /// The `rehash` a wide table never calls.
    static func storedHashOnly(_ slot: UInt32) -> UInt32 {
        preconditionFailure("a wide bucket keeps its hash")
    }
}

/// 4 bytes: the hash's low 8 bits as a tag (a probe skips 255 of 256 other keys without
/// reading their inode) and slot + 1 in the low 24 bits, so slots up to 16,777,213. For a
/// table whose key is hashed again from its slot (an inode's id).
enum NarrowSlot: SlotBucket {
    private static let slotBits: UInt32 = 24
    private static let slotMask: UInt32 = 1 << slotBits - 1
    static let tombstone = UInt32.max
    /// slot + 1 below `slotMask`, so no bucket is the tombstone.
    static let largestSlot = slotMask - 2

    static func bucket(slot: UInt32, hash: UInt32) -> UInt32 { (hash & 0xFF) << slotBits | (slot + 1) }
    static func slot(in bucket: UInt32) -> UInt32 { (bucket & slotMask) &- 1 }
    static func mayHold(_ bucket: UInt32, hash: UInt32) -> Bool { bucket >> slotBits == hash & 0xFF }
    static func hash(of bucket: UInt32, rehash: (UInt32) -> UInt32) -> UInt32 { rehash(slot(in: bucket)) }
    static func moving(_ bucket: UInt32, to slot: UInt32) -> UInt32 { bucket & ~slotMask | (slot + 1) }
}
