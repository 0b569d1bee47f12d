import CacheModel
import struct Foundation.Data

/// The inodes in memory: one array of packed ``Inode``s (a freed position is reused by the
/// next inode) and a ``SlotTable`` from id to position. Reads and writes by id, as a
/// dictionary would, at 80 bytes an inode plus 5 to 8 for its bucket (4 bytes at a load of
/// 1/2 to 3/4; 10 to 16 once positions outgrow a ``NarrowSlot``, past 16 million inodes).
struct InodeTable: Sendable {
    private var inodes: [Inode] = []
    private var vacant: [UInt32] = []
    private var byID: NarrowingSlotTable

    /// `narrowLimit`: see ``NarrowingSlotTable``.
    init(narrowLimit: UInt32 = NarrowSlot.largestSlot) {
        byID = NarrowingSlotTable(narrowLimit: narrowLimit)
    }

    var count: Int { byID.count }
    /// Positions freed and not reused yet: they hold a vacant inode's 80 bytes each.
    var vacantCount: Int { vacant.count }
    /// Bytes the inodes hold beyond their own 80 (``Inode/heapBytes``: long names, extras).
    private(set) var heapBytes = 0
    /// Bytes the id table's buckets take.
    var idTableBytes: Int { byID.bucketBytes }

    static func hash(of id: EntryID) -> UInt32 {
        UInt32(truncatingIfNeeded: (UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15) >> 32)
    }

    func slot(of id: EntryID) -> UInt32? {
        byID.first(hash: Self.hash(of: id)) { inodes[Int($0)].id == id }
    }

    /// The inode at a position a ``SlotTable`` handed out (it must be occupied).
    subscript(slot slot: UInt32) -> Inode { inodes[Int(slot)] }

    subscript(id: EntryID) -> Inode? {
        get { slot(of: id).map { inodes[Int($0)] } }
        set {
            if let slot = slot(of: id) {
                heapBytes -= inodes[Int(slot)].heapBytes
                heapBytes += newValue?.heapBytes ?? 0
                if let newValue {
                    inodes[Int(slot)] = newValue
                } else {
                    removeFromIDTable(slot, id: id)
                    inodes[Int(slot)] = Self.vacantInode
                    vacant.append(slot)
                }
            } else if let newValue {
                heapBytes += newValue.heapBytes
                let slot: UInt32
                if let reused = vacant.popLast() {
                    slot = reused
                    inodes[Int(slot)] = newValue
                } else {
                    slot = UInt32(inodes.count)
                    inodes.append(newValue)
                }
                insertIntoIDTable(slot, id: id)
            }
        }
    }

    /// Makes room for `additional` more inodes than it holds, so that many inserts grow
    /// neither the array nor the id table (each growth copies the whole).
    mutating func reserve(_ additional: Int) {
        let needed = count + additional
        // Freed positions are taken first; past them the array grows.
        if inodes.capacity < needed { inodes.reserveCapacity(needed) }
        let inodes = self.inodes
        byID.reserve(needed) { Self.hash(of: inodes[Int($0)].id) }
    }

    /// The id table's keys are hashed again from their positions: the closure reads a local
    /// reference to `inodes` (reading `self` in it would overlap the change of `byID`).
    private mutating func insertIntoIDTable(_ slot: UInt32, id: EntryID) {
        let inodes = self.inodes
        byID.insert(slot, hash: Self.hash(of: id)) { Self.hash(of: inodes[Int($0)].id) }
    }

    private mutating func removeFromIDTable(_ slot: UInt32, id: EntryID) {
        let inodes = self.inodes
        byID.remove(slot, hash: Self.hash(of: id)) { Self.hash(of: inodes[Int($0)].id) }
    }

    /// Changes an inode in place, without copying it out and back.
    mutating func modify<T>(_ id: EntryID, _ body: (inout Inode) throws -> T) rethrows -> T? {
        guard let slot = slot(of: id) else { return nil }
        let before = inodes[Int(slot)].heapBytes
        defer { heapBytes += inodes[Int(slot)].heapBytes - before }
        return try body(&inodes[Int(slot)])
    }

    /// Moves the inodes into a new array without vacant positions, so the old one's memory
    /// goes back; returns each old position's new one (``SlotTable/remapSlots(_:)`` for the
    /// tables that hold positions).
    mutating func compact() -> [UInt32] {
        var isVacant = [Bool](repeating: false, count: inodes.count)
        for slot in vacant { isVacant[Int(slot)] = true }
        var newSlot = [UInt32](repeating: 0, count: inodes.count)
        var packed: [Inode] = []
        packed.reserveCapacity(inodes.count - vacant.count)
        for position in inodes.indices where !isVacant[position] {
            newSlot[position] = UInt32(packed.count)
            packed.append(inodes[position])
        }
        inodes = packed
        vacant = []
        compactions += 1
        byID.remapSlots(newSlot)
        return newSlot
    }

    var values: [Inode] { byID.slots.map { inodes[Int($0)] } }

    /// Positions in use or vacant: the end of the range ``forEach(inPositions:_:)`` takes.
    var positions: Int { inodes.count }
    /// How many times ``compact()`` moved the inodes: a scan in several holds starts again
    /// when it changed between two of them.
    private(set) var compactions = 0

    /// The loaded inodes at `range`'s positions (vacant ones skipped).
    func forEach(inPositions range: Range<Int>, _ body: (Inode) -> Void) {
        for position in range.clamped(to: inodes.indices) where inodes[position].id != 0 { body(inodes[position]) }
    }

    /// Every loaded inode, without copying them all into an array first.
    func forEach(_ body: (Inode) -> Void) {
        for slot in byID.slots { body(inodes[Int(slot)]) }
    }

    /// What a freed position holds until it is reused: nothing that owns memory.
    private static let vacantInode = Inode(record: EntryRecord(
        id: 0, parent: nil, name: Data(), pool: 0, kind: .file, mode: 0, uid: 0, gid: 0, size: 0, atime: 0,
        mtime: 0, ctime: 0, lastAccess: 0, persistent: false, pinnedUntil: 0, expiration: 0, writing: false,
        durable: false))
}
