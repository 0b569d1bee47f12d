/// A doubly linked list of resident objects in an array of slots (no class per node), with
/// its own `SlotIndex` from key to slot: the building block of every policy here but GDSF.
/// Value semantics: a copy is a snapshot.
///
/// Memory per object: a 32-byte node (key, size, a 32-bit fingerprint, two 32-bit links, a
/// mark) and the index's 4-byte buckets (1.3 to 2.7 of them): about 38 bytes.
struct ResidentList: Sendable {
    static let none: Int32 = -1

    struct Node: KeyedSlot, Sendable {
        var key: CacheKey
        /// Bytes (or 1 in a cache that counts objects): see `ReplacementPolicy`.
        var size: Int64
        var compactFingerprint: UInt32
        var previous: Int32
        var next: Int32
        /// A policy's own small state: a read counter, a visited bit, a segment.
        var mark: UInt8

        /// The fingerprint as policies pass it on (ghosts, sketches, conversions).
        var fingerprint: UInt64 { UInt64(compactFingerprint) }
    }

    /// Fingerprints are kept in 32 bits (the low bits of a mixed 64-bit hash): ghosts and
    /// sketches keyed by them collide once in four billion.
    static func compact(_ fingerprint: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: fingerprint) }

    /// A fingerprint as a node keeps it: what ghosts and sketches must be keyed by.
    static func canonical(_ fingerprint: UInt64) -> UInt64 { UInt64(compact(fingerprint)) }

    private(set) var nodes: [Node] = []
    private var free: [Int32] = []
    private var index = SlotIndex()
    /// The oldest end (next to go) and the newest end.
    private(set) var oldest: Int32 = none
    private(set) var newest: Int32 = none
    private(set) var count = 0
    /// The sizes of the listed objects, added up.
    private(set) var bytes: Int64 = 0

    func slot(of key: CacheKey) -> Int32? { index.slot(of: key, in: nodes) }

    /// Room for `residents` objects without growing (a policy built with a known count).
    mutating func reserveCapacity(_ residents: Int) {
        nodes.reserveCapacity(residents)
        index.reserveCapacity(residents, in: nodes)
    }

    /// A node by slot. Its size changes through `resize` only, so `bytes` stays right.
    subscript(slot: Int32) -> Node {
        get { nodes[Int(slot)] }
        set {
            precondition(newValue.size == nodes[Int(slot)].size, "a node's size changes through resize")
            nodes[Int(slot)] = newValue
        }
    }

    mutating func resize(_ slot: Int32, to size: Int64) {
        bytes += size - nodes[Int(slot)].size
        nodes[Int(slot)].size = size
    }

    /// Adds a key at the newest end; returns its slot.
    @discardableResult
    mutating func appendNewest(_ key: CacheKey, fingerprint: UInt64, size: Int64, mark: UInt8 = 0) -> Int32 {
        let node = Node(key: key, size: size, compactFingerprint: Self.compact(fingerprint), previous: newest,
                        next: Self.none, mark: mark)
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
            nodes[Int(slot)] = node
        } else {
            slot = Int32(nodes.count)
            nodes.append(node)
        }
        if newest != Self.none { nodes[Int(newest)].next = slot } else { oldest = slot }
        newest = slot
        index.insert(slot, in: nodes)
        count += 1
        bytes += size
        return slot
    }

    /// Takes a slot out of the list (it stays valid until reused).
    mutating func unlink(_ slot: Int32) {
        let node = nodes[Int(slot)]
        if node.previous != Self.none { nodes[Int(node.previous)].next = node.next } else { oldest = node.next }
        if node.next != Self.none { nodes[Int(node.next)].previous = node.previous } else { newest = node.previous }
    }

    /// Removes a key for good.
    @discardableResult
    mutating func remove(_ slot: Int32) -> Node {
        unlink(slot)
        let node = nodes[Int(slot)]
        index.remove(slot, in: nodes)
        free.append(slot)
        count -= 1
        bytes -= node.size
        return node
    }

    /// Moves a slot to the newest end.
    mutating func moveToNewest(_ slot: Int32) {
        guard slot != newest else { return }
        unlink(slot)
        nodes[Int(slot)].previous = newest
        nodes[Int(slot)].next = Self.none
        if newest != Self.none { nodes[Int(newest)].next = slot } else { oldest = slot }
        newest = slot
    }
}
