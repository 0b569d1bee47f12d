/// A doubly linked list of resident objects in an array of slots (no class per node), with
/// its own `SlotIndex` from key to slot: the building block of every policy here but GDSF and
/// W-TinyLFU, which uses all three segments of the `SegmentedList` this is one segment of.
/// Value semantics: a copy is a snapshot.
///
/// Memory per object: a 24-byte node (key, a 32-bit fingerprint, two 32-bit links, and the
/// size, a mark and a segment in 32 bits; sizes of 256 MiB or more kept beside) and the
/// index's 4-byte buckets (1.3 to 2 of them): about 30 bytes.
struct ResidentList: Sendable {
    static let none = SegmentedList.none

    typealias Node = SegmentedList.Node

    /// Fingerprints are kept in 32 bits (the low bits of a mixed 64-bit hash): ghosts and
    /// sketches keyed by them collide once in four billion.
    static func compact(_ fingerprint: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: fingerprint) }

    /// A fingerprint as a node keeps it: what ghosts and sketches must be keyed by.
    static func canonical(_ fingerprint: UInt64) -> UInt64 { UInt64(compact(fingerprint)) }

    private var list = SegmentedList()

    /// The oldest end (next to go) and the newest end.
    var oldest: Int32 { list[ends: .first].oldest }
    var newest: Int32 { list[ends: .first].newest }
    var count: Int { list.count }
    /// The sizes of the listed objects, added up.
    var bytes: Int64 { list.bytes }
    var memoryBytes: Int { list.memoryBytes }

    func slot(of key: CacheKey) -> Int32? { list.slot(of: key) }

    /// Room for `residents` objects without growing (a policy built with a known count).
    mutating func reserveCapacity(_ residents: Int) {
        list.reserveCapacity(residents)
    }

    /// A node by slot, as a copy: its mark changes through `setMark`, its size through
    /// `resize` (so `bytes` stays right).
    subscript(slot: Int32) -> Node { list[slot] }

    func mark(at slot: Int32) -> UInt8 { list.mark(at: slot) }

    mutating func setMark(_ mark: UInt8, at slot: Int32) { list.setMark(mark, at: slot) }

    mutating func resize(_ slot: Int32, to size: Int64) {
        list.resize(slot, to: size)
    }

    /// Adds a key at the newest end; returns its slot.
    @discardableResult
    mutating func appendNewest(_ key: CacheKey, fingerprint: UInt64, size: Int64, mark: UInt8 = 0) -> Int32 {
        list.appendNewest(key, fingerprint: fingerprint, size: size, mark: mark, to: .first)
    }

    /// Removes a key for good.
    @discardableResult
    mutating func remove(_ slot: Int32) -> Node {
        list.remove(slot)
    }

    /// Moves a slot to the newest end.
    mutating func moveToNewest(_ slot: Int32) {
        list.moveToNewest(slot)
    }
}
