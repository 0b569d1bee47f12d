import CacheModel
import struct Foundation.Data

/// The names in one directory, held in memory once the directory has been loaded.
///
/// Two tables map a 32-bit hash of each name to the slot of its inode in ``InodeTable``; the
/// inode holds the name, so a lookup confirms it there (two names with one hash both stay,
/// each found by its own comparison). `ownNames` holds the names that are their inode's own
/// (the record's parent and name), 4 bytes a bucket: a rebuild hashes each inode's own name
/// again. `linkNames` holds hard links' names, which an inode does not keep apart from its
/// others, so their buckets keep the whole hash (8 bytes; few entries have links). A
/// promoted link (its inode's own name removed) stays in `linkNames` until it goes. `order`
/// keeps child ids ascending (4 bytes each while ids fit 32 bits, see ``ChildOrder``), the
/// cursor of a listing (ids are never reused, so a listing resumes correctly across
/// changes). New files
/// get the largest id so far and are appended; a removal only counts a stale slot, and the
/// slots are swept out once they are half the array, so removing many names costs O(1) each,
/// amortised.
struct DirectoryChildren: Sendable {
    private var ownNames = NarrowingSlotTable()
    private var linkNames = SlotTable<WideSlot>()
    private var order = ChildOrder()
    private var staleSlots = 0
    /// When a name in it was last looked up or listed, or it was loaded (wall clock,
    /// nanoseconds): how long it has been idle, for ``Names/unloadIdleDirectories()``.
    var lastUsed: Int64 = 0

    var isEmpty: Bool { count == 0 }
    var count: Int { ownNames.count + linkNames.count }

    static func hash(of name: Data) -> UInt32 {
        name.withUnsafeBytes(hash(of:))
    }

    static func hash(of bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return UInt32(truncatingIfNeeded: hasher.finalize())
    }

    /// The hash of the own name of the inode at a slot, for `ownNames`' rebuilds.
    private static func ownNameHashes(_ inodes: InodeTable) -> (UInt32) -> UInt32 {
        { slot in inodes[slot: slot].withOwnNameBytes(hash(of:)) }
    }

    /// Makes room for `additional` more own names (a load that knows its directory's size).
    mutating func reserve(_ additional: Int, inodes: InodeTable) {
        ownNames.reserve(ownNames.count + additional, rehash: Self.ownNameHashes(inodes))
        order.reserve(order.count + additional)
    }

    /// The slot of the inode called `name` in this directory (`directory` is its id).
    func slot(named name: Data, in directory: EntryID, inodes: InodeTable) -> UInt32? {
        let hash = Self.hash(of: name)
        let matches = { (slot: UInt32) in inodes[slot: slot].isNamed(name, in: directory) }
        if let slot = ownNames.first(hash: hash, where: matches) { return slot }
        return linkNames.count == 0 ? nil : linkNames.first(hash: hash, where: matches)
    }

    /// With `ordered` false the id is only appended: a load enters names in the index's name
    /// order, and keeping ids sorted one insertion at a time would move half the array each
    /// time (quadratic in the directory's size). ``restoreOrder()`` sorts them once at the end.
    /// (`inodes` holds the inode at `slot` as named now.)
    mutating func insert(_ id: EntryID, slot: UInt32, named name: Data, in directory: EntryID, inodes: InodeTable,
                         ordered: Bool = true) {
        let hash = Self.hash(of: name)
        if inodes[slot: slot].hasOwnName(name, in: directory) {
            ownNames.insert(slot, hash: hash, rehash: Self.ownNameHashes(inodes))
        } else {
            linkNames.insert(slot, hash: hash)
        }
        if !ordered {
            order.append(id)
        } else if let last = order.last, id <= last {
            let position = firstPosition(after: id - 1)
            if position < order.count, order[position] == id {
                staleSlots = max(0, staleSlots - 1)
                return
            }
            order.insert(id, at: position)
        } else {
            order.append(id)
        }
    }

    /// Sorts the ids appended by unordered inserts, each once (an inode with two names here
    /// is listed by its id once, as an ordered insert keeps it).
    mutating func restoreOrder() {
        order.sortKeepingOneOfEach()
    }

    /// Takes the name `name` of the inode at `slot` away (`inodes` holds it as named before
    /// the removal); its slot in `order` goes at the next sweep.
    mutating func remove(slot: UInt32, named name: Data, in directory: EntryID, inodes: InodeTable) {
        let hash = Self.hash(of: name)
        // An own name's bucket keeps 8 bits of its hash, so only the own name may take it
        // away (a link's name sharing those bits would take the wrong one); an own name that
        // was a link until its inode's first name went is still in `linkNames`.
        let removed = inodes[slot: slot].hasOwnName(name, in: directory)
            ? ownNames.remove(slot, hash: hash, rehash: Self.ownNameHashes(inodes)) || linkNames.remove(slot, hash: hash)
            : linkNames.remove(slot, hash: hash)
        guard removed else { return }
        staleSlots += 1
        if staleSlots > 64 && staleSlots * 2 > order.count {
            let live = Set((ownNames.slots + linkNames.slots).map { inodes[slot: $0].id })
            order.removeAll { !live.contains($0) }
            staleSlots = 0
        }
    }

    /// Every child id, ascending; ids whose names left since the last sweep among them.
    var ids: [EntryID] { order.all }

    /// See ``InodeTable/compact()``.
    mutating func remapSlots(_ newSlot: [UInt32]) {
        ownNames.remapSlots(newSlot)
        linkNames.remapSlots(newSlot)
    }

    /// Up to `limit` child ids greater than `cursor`, ascending; `isLive` filters stale slots.
    func page(after cursor: EntryID, limit: Int, isLive: (EntryID) -> Bool) -> [EntryID] {
        var result: [EntryID] = []
        var position = firstPosition(after: cursor)
        while position < order.count && result.count < limit {
            if isLive(order[position]) { result.append(order[position]) }
            position += 1
        }
        return result
    }

    private func firstPosition(after cursor: EntryID) -> Int {
        var low = 0
        var high = order.count
        while low < high {
            let middle = (low + high) / 2
            if order[middle] <= cursor { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
