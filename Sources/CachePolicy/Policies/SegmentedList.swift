/// Three doubly linked lists (a policy's segments) over one array of nodes and one
/// `SlotIndex` (`ResidentList` is one segment of it). An object keeps its slot when it moves
/// from one segment to another, so a move relinks three nodes and touches neither the index
/// nor a free list, and a lookup is one probe whichever segment holds the key. Value
/// semantics: a copy is a snapshot.
///
/// Memory per object: a 24-byte `StoredNode` and the index's 4-byte buckets (1.3 to 2 of
/// them); a size of 256 MiB or more adds an entry of ``NarrowSizes``.
struct SegmentedList: Sendable {
    static let none: Int32 = -1

    enum Segment: UInt8, Sendable {
        case first, second, third
    }

    /// An object as the policies see it.
    struct Node: Sendable {
        var key: CacheKey
        /// Bytes (or 1 in a cache that counts objects): see `ReplacementPolicy`.
        var size: Int64
        var compactFingerprint: UInt32
        var previous: Int32
        var next: Int32
        /// A policy's own small state (0 to 3): a read counter, a visited bit, a candidate.
        var mark: UInt8
        var segment: Segment

        /// The fingerprint as policies pass it on (see `ResidentList.compact`).
        var fingerprint: UInt64 { UInt64(compactFingerprint) }
    }

    /// An object as the list keeps it, in 24 bytes (a test holds it to that): its size in the
    /// low 28 bits of `packed` (or ``NarrowSizes/wideMark``, the size then in `sizes`), its
    /// mark in the next 2 and its segment in the top 2.
    struct StoredNode: KeyedSlot, Sendable {
        var key: CacheKey
        var packed: UInt32
        var compactFingerprint: UInt32
        var previous: Int32
        var next: Int32

        static let sizeBits: UInt32 = 28
        static let sizeMask: UInt32 = 1 << sizeBits - 1

        var narrowSize: UInt32 {
            get { packed & Self.sizeMask }
            set { packed = packed & ~Self.sizeMask | newValue }
        }

        var mark: UInt8 {
            get { UInt8(packed >> Self.sizeBits & 0b11) }
            set {
                assert(newValue <= 0b11, "a mark takes 2 bits")
                packed = packed & ~(0b11 << Self.sizeBits) | UInt32(newValue & 0b11) << Self.sizeBits
            }
        }

        var segment: Segment {
            get { Segment(rawValue: UInt8(packed >> (Self.sizeBits + 2)))! }
            set { packed = packed & ~(0b11 << (Self.sizeBits + 2)) | UInt32(newValue.rawValue) << (Self.sizeBits + 2) }
        }
    }

    /// One segment's ends (the oldest goes first), objects and bytes.
    struct Ends: Sendable {
        var oldest = SegmentedList.none
        var newest = SegmentedList.none
        var count = 0
        var bytes: Int64 = 0
    }

    private(set) var nodes: [StoredNode] = []
    private var sizes = NarrowSizes(bits: Int(StoredNode.sizeBits))
    private var free: [Int32] = []
    private var index = SlotIndex()
    private var firstEnds = Ends()
    private var secondEnds = Ends()
    private var thirdEnds = Ends()

    /// Objects in all three segments.
    var count: Int { firstEnds.count + secondEnds.count + thirdEnds.count }

    /// Bytes in all three segments.
    var bytes: Int64 { firstEnds.bytes + secondEnds.bytes + thirdEnds.bytes }

    /// The node array's, the free list's and the index's bytes (see
    /// ``ReplacementPolicy/memoryBytes``).
    var memoryBytes: Int { MemoryBytes.of(nodes) + sizes.memoryBytes + MemoryBytes.of(free) + index.memoryBytes }

    private(set) subscript(ends segment: Segment) -> Ends {
        get {
            switch segment {
            case .first: return firstEnds
            case .second: return secondEnds
            case .third: return thirdEnds
            }
        }
        set {
            switch segment {
            case .first: firstEnds = newValue
            case .second: secondEnds = newValue
            case .third: thirdEnds = newValue
            }
        }
    }

    func slot(of key: CacheKey) -> Int32? { index.slot(of: key, in: nodes) }

    /// A node by slot, as a copy: its mark changes through `setMark`, its size and segment
    /// through `resize` and `move` (so the segments' bytes stay right).
    subscript(slot: Int32) -> Node {
        let stored = nodes[Int(slot)]
        return Node(key: stored.key, size: sizes.size(stored.narrowSize, at: slot),
                    compactFingerprint: stored.compactFingerprint, previous: stored.previous, next: stored.next,
                    mark: stored.mark, segment: stored.segment)
    }

    /// A policy's own small state of a slot (0 to 3), read and set without unpacking the rest.
    func mark(at slot: Int32) -> UInt8 { nodes[Int(slot)].mark }

    mutating func setMark(_ mark: UInt8, at slot: Int32) { nodes[Int(slot)].mark = mark }

    private func size(at slot: Int32) -> Int64 { sizes.size(nodes[Int(slot)].narrowSize, at: slot) }

    mutating func reserveCapacity(_ residents: Int) {
        nodes.reserveCapacity(residents)
        index.reserveCapacity(residents, in: nodes)
    }

    mutating func resize(_ slot: Int32, to size: Int64) {
        self[ends: nodes[Int(slot)].segment].bytes += size - self.size(at: slot)
        nodes[Int(slot)].narrowSize = sizes.store(size, at: slot, replacing: nodes[Int(slot)].narrowSize)
    }

    /// Adds a key at the newest end of a segment; returns its slot.
    @discardableResult
    mutating func appendNewest(_ key: CacheKey, fingerprint: UInt64, size: Int64, mark: UInt8 = 0,
                               to segment: Segment) -> Int32 {
        let slot = free.popLast() ?? Int32(nodes.count)
        var node = StoredNode(key: key, packed: 0, compactFingerprint: ResidentList.compact(fingerprint),
                              previous: Self.none, next: Self.none)
        node.narrowSize = sizes.store(size, at: slot, replacing: nil)
        node.mark = mark
        node.segment = segment
        if Int(slot) < nodes.count {
            nodes[Int(slot)] = node
        } else {
            nodes.append(node)
        }
        index.insert(slot, in: nodes)
        link(slot, to: segment)
        return slot
    }

    /// Removes a key for good.
    @discardableResult
    mutating func remove(_ slot: Int32) -> Node {
        unlink(slot)
        let node = self[slot]
        index.remove(slot, in: nodes)
        sizes.forget(nodes[Int(slot)].narrowSize, at: slot)
        free.append(slot)
        return node
    }

    /// Moves an object to the newest end of a segment (its own or another) with a new mark.
    mutating func move(_ slot: Int32, to segment: Segment, mark: UInt8) {
        unlink(slot)
        nodes[Int(slot)].mark = mark
        link(slot, to: segment)
    }

    /// Moves an object to the newest end of its own segment, its mark kept.
    mutating func moveToNewest(_ slot: Int32) {
        let segment = nodes[Int(slot)].segment
        guard slot != self[ends: segment].newest else { return }
        move(slot, to: segment, mark: nodes[Int(slot)].mark)
    }

    private mutating func link(_ slot: Int32, to segment: Segment) {
        let newest = self[ends: segment].newest
        nodes[Int(slot)].segment = segment
        nodes[Int(slot)].previous = newest
        nodes[Int(slot)].next = Self.none
        if newest != Self.none { nodes[Int(newest)].next = slot } else { self[ends: segment].oldest = slot }
        self[ends: segment].newest = slot
        self[ends: segment].count += 1
        self[ends: segment].bytes += size(at: slot)
    }

    private mutating func unlink(_ slot: Int32) {
        let node = nodes[Int(slot)]
        if node.previous != Self.none {
            nodes[Int(node.previous)].next = node.next
        } else {
            self[ends: node.segment].oldest = node.next
        }
        if node.next != Self.none {
            nodes[Int(node.next)].previous = node.previous
        } else {
            self[ends: node.segment].newest = node.previous
        }
        self[ends: node.segment].count -= 1
        self[ends: node.segment].bytes -= size(at: slot)
    }
}
