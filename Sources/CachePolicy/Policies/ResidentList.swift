/// A doubly linked list of resident objects in arrays of slots (no class per node), with a
/// map from key to slot: the building block of every policy here. Value semantics: a copy
/// is a snapshot. Each node costs 32 bytes (key, fingerprint, two links, a mark), plus about
/// 17 in the key map (13 bytes a bucket, at most three quarters full).
struct ResidentList: Sendable {
    static let none: Int32 = -1

    struct Node: Sendable {
        var key: CacheKey
        var fingerprint: UInt64
        var previous: Int32
        var next: Int32
        /// A policy's own small state: a read counter, a visited bit, a segment.
        var mark: UInt8
    }

    private(set) var nodes: [Node] = []
    private var free: [Int32] = []
    private(set) var slots = KeyMap<Int32>()
    /// The oldest end (next to go) and the newest end.
    private(set) var oldest: Int32 = none
    private(set) var newest: Int32 = none
    private(set) var count = 0

    func slot(of key: CacheKey) -> Int32? { slots[key] }

    subscript(slot: Int32) -> Node {
        get { nodes[Int(slot)] }
        set { nodes[Int(slot)] = newValue }
    }

    /// Adds a key at the newest end; returns its slot.
    @discardableResult
    mutating func appendNewest(_ key: CacheKey, fingerprint: UInt64, mark: UInt8 = 0) -> Int32 {
        let node = Node(key: key, fingerprint: fingerprint, previous: newest, next: Self.none, mark: mark)
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
        slots[key] = slot
        count += 1
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
        slots[node.key] = nil
        free.append(slot)
        count -= 1
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

    /// Keys from the oldest end to the newest.
    var keysOldestFirst: [(key: CacheKey, fingerprint: UInt64)] {
        var result: [(CacheKey, UInt64)] = []
        result.reserveCapacity(count)
        var slot = oldest
        while slot != Self.none {
            let node = nodes[Int(slot)]
            result.append((node.key, node.fingerprint))
            slot = node.next
        }
        return result
    }
}
