@testable import CacheCore
import CacheModel
@testable import CacheNames
import Foundation
import Testing

@Suite struct SlotTableTests {
    @Test func slotsUnderOneHashAreEachFoundByTheirOwnComparison() {
        var table = SlotTable<WideSlot>()
        for slot in UInt32(0)..<100 { table.insert(slot, hash: 7) }
        #expect(table.count == 100)
        #expect(table.first(hash: 7) { $0 == 42 } == 42)
        #expect(table.first(hash: 8) { _ in true } == nil)
        let removed = table.remove(42, hash: 7)
        let removedAgain = table.remove(42, hash: 7)
        #expect(removed && !removedAgain)
        #expect(table.first(hash: 7) { $0 == 42 } == nil)
        #expect(table.first(hash: 7) { $0 == 99 } == 99)
    }

    /// A narrow table's key is its slot's hash again, as an inode's id is for ``InodeTable``.
    private static func keyHash(_ slot: UInt32) -> UInt32 { slot &* 2_654_435_761 }

    @Test func aNarrowTableFindsSlotsWhoseHashesShareTheirTag() {
        var table = SlotTable<NarrowSlot>()
        // Every slot below has a hash with the same low byte, so the tag never tells them apart.
        let hash = { (slot: UInt32) in slot << 8 | 0x5A }
        for slot in UInt32(0)..<300 { table.insert(slot, hash: hash(slot), rehash: hash) }
        for slot in UInt32(0)..<300 { #expect(table.first(hash: hash(slot)) { $0 == slot } == slot) }
        #expect(table.first(hash: hash(300)) { $0 == 300 } == nil)
        let removed = table.remove(17, hash: hash(17), rehash: hash)
        let removedAgain = table.remove(17, hash: hash(17), rehash: hash)
        #expect(removed && !removedAgain)
        #expect(table.first(hash: hash(17)) { $0 == 17 } == nil)
        #expect(table.count == 299)
        #expect(table.bucketBytes <= 300 * 2 * 4)
    }

    @Test func aNarrowBucketKeepsItsLargestSlotAndTagApartFromTheTombstone() {
        let largest = NarrowSlot.largestSlot
        #expect(largest == 16_777_213)
        for hash in [UInt32(0), 0xFF, 0xFFFF_FFFF, 0x1234_5678] {
            for slot in [UInt32(0), 1, largest - 1, largest] {
                let bucket = NarrowSlot.bucket(slot: slot, hash: hash)
                #expect(bucket != 0 && bucket != NarrowSlot.tombstone)
                #expect(NarrowSlot.slot(in: bucket) == slot)
                #expect(NarrowSlot.mayHold(bucket, hash: hash))
                #expect(!NarrowSlot.mayHold(bucket, hash: hash ^ 1))
                #expect(NarrowSlot.slot(in: NarrowSlot.moving(bucket, to: 3)) == 3)
                #expect(NarrowSlot.mayHold(NarrowSlot.moving(bucket, to: 3), hash: hash))
            }
        }
    }

    @Test(arguments: [false, true])
    func manyInsertsAndRemovalsKeepExactlyTheLiveSlots(narrow: Bool) {
        var wide = SlotTable<WideSlot>()
        var narrowTable = SlotTable<NarrowSlot>()
        var live: Set<UInt32> = []
        var generator = SystemRandomNumberGenerator()
        func slots() -> Set<UInt32> { Set(narrow ? narrowTable.slots : wide.slots) }
        for step in 0..<20_000 {
            let slot = UInt32.random(in: 0..<2_000, using: &generator)
            let hash = Self.keyHash(slot)
            if live.contains(slot) {
                let removed = narrow ? narrowTable.remove(slot, hash: hash, rehash: Self.keyHash)
                    : wide.remove(slot, hash: hash)
                #expect(removed)
                live.remove(slot)
            } else {
                if narrow { narrowTable.insert(slot, hash: hash, rehash: Self.keyHash) } else { wide.insert(slot, hash: hash) }
                live.insert(slot)
            }
            if step % 1_000 == 0 { #expect(slots() == live) }
        }
        #expect((narrow ? narrowTable.count : wide.count) == live.count)
        for slot in UInt32(0)..<2_000 {
            let found = narrow ? narrowTable.first(hash: Self.keyHash(slot)) { $0 == slot }
                : wide.first(hash: Self.keyHash(slot)) { $0 == slot }
            #expect(found == (live.contains(slot) ? slot : nil))
        }
    }

    @Test func anInodeTablePastItsNarrowLimitMovesToWideBucketsAndFindsEveryID() {
        var table = InodeTable(narrowLimit: 100)
        for id in EntryID(1)...90 { table[id] = Inode(record: Self.record(id)) }
        let narrowBytes = table.idTableBytes
        #expect(narrowBytes % 4 == 0 && narrowBytes <= 90 * 2 * 4)
        for id in stride(from: EntryID(1), through: 90, by: 3) { table[id] = nil }
        for id in EntryID(91)...400 { table[id] = Inode(record: Self.record(id)) }
        #expect(table.idTableBytes >= table.count * 8)
        for id in stride(from: EntryID(2), through: 400, by: 5) { table[id] = nil }
        var expected: Set<EntryID> = []
        for id in EntryID(1)...400 where !(id <= 90 && id % 3 == 1) && id % 5 != 2 { expected.insert(id) }
        #expect(table.count == expected.count)
        #expect(Set(table.values.map(\.id)) == expected)
        for id in EntryID(1)...401 { #expect((table[id]?.record == Self.record(id)) == expected.contains(id)) }
        _ = table.compact()
        #expect(table.vacantCount == 0)
        for id in EntryID(1)...401 { #expect((table[id]?.record == Self.record(id)) == expected.contains(id)) }
    }

    @Test func aCompactedNarrowInodeTableFindsEveryIDAtItsNewPosition() {
        var table = InodeTable()
        for id in EntryID(1)...2_000 { table[id] = Inode(record: Self.record(id)) }
        for id in EntryID(1)...2_000 where id % 4 != 0 { table[id] = nil }
        #expect(table.vacantCount == 1_500)
        _ = table.compact()
        #expect(table.vacantCount == 0 && table.count == 500)
        for id in EntryID(1)...2_000 { #expect((table[id]?.record == Self.record(id)) == (id % 4 == 0)) }
        table[2_001] = Inode(record: Self.record(2_001))
        #expect(table[2_001]?.record == Self.record(2_001))
    }

    /// A scan in ranges of positions (a settings change's, in bounded holds) sees every
    /// loaded inode once and no vacant one; a compaction between two ranges is counted, so
    /// the scan knows to start again.
    @Test func aScanInRangesOfPositionsSeesEveryInodeOnceAndNoticesACompaction() {
        var table = InodeTable()
        for id in EntryID(1)...2_000 { table[id] = Inode(record: Self.record(id)) }
        for id in EntryID(1)...2_000 where id % 3 == 0 { table[id] = nil }
        var seen: [EntryID] = []
        for start in stride(from: 0, to: table.positions, by: 300) {
            table.forEach(inPositions: start..<(start + 300)) { seen.append($0.id) }
        }
        #expect(seen.sorted() == (EntryID(1)...2_000).filter { $0 % 3 != 0 })
        let before = table.compactions
        _ = table.compact()
        #expect(table.compactions == before + 1 && table.positions == table.count)
    }

    @Test func aChildOrderPastThirtyTwoBitIDsKeepsEveryIDInOrder() {
        var order = ChildOrder()
        for id in EntryID(1)...10 { order.append(id * 10) }
        order.insert(15, at: 1)
        #expect(order.bytes < 16 * 8)
        let big = EntryID(UInt32.max) + 3
        order.append(big)
        order.insert(EntryID(UInt32.max), at: order.count - 1)
        order.append(10)
        order.append(big)
        order.sortKeepingOneOfEach()
        #expect(order.all == [10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, EntryID(UInt32.max), big])
        #expect(order.last == big && order[11] == EntryID(UInt32.max))
        order.removeAll { $0 % 20 == 0 }
        #expect(order.all == [10, 15, 30, 50, 70, 90, EntryID(UInt32.max), big])
    }

    @Test func aNarrowChildOrderSortsAndDropsRepeats() {
        var order = ChildOrder()
        for id in [EntryID(5), 3, 5, 1, EntryID(UInt32.max), 3] { order.append(id) }
        order.sortKeepingOneOfEach()
        #expect(order.all == [1, 3, 5, EntryID(UInt32.max)])
        #expect(order.bytes < 8 * 8)
    }

    /// The table's running total of what inodes hold beyond their own bytes is the sum over
    /// its inodes, through inserts, replacements, changes in place and removals.
    @Test func theInodeTableCountsWhatItsInodesHoldBeyondThemselves() {
        var table = InodeTable()
        var generator = SystemRandomNumberGenerator()
        for step in 0..<5_000 {
            let id = EntryID.random(in: 1...300, using: &generator)
            var record = Self.record(id)
            record.name = Data(repeating: 0x61, count: Int.random(in: 0...40, using: &generator))
            if Bool.random(using: &generator) { record.target = Data(repeating: 0x62, count: 30) }
            if Bool.random(using: &generator) { record.pinnedUntil = -1 }
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: table[id] = nil
            case 1: table.modify(id) { $0.record = record }
            case 2: table.modify(id) { $0.links = [LinkName(parent: 2, name: Data(repeating: 0x63, count: 20))] }
            default: table[id] = Inode(record: record)
            }
            if step % 500 == 0 { #expect(table.heapBytes == table.values.reduce(0) { $0 + $1.heapBytes }) }
        }
        #expect(table.heapBytes == table.values.reduce(0) { $0 + $1.heapBytes })
        #expect(table.heapBytes > 0)
        for id in EntryID(1)...300 { table[id] = nil }
        #expect(table.heapBytes == 0 && table.count == 0)
    }

    private static func record(_ id: EntryID) -> EntryRecord {
        EntryRecord(id: id, parent: 1, name: Data("n\(id)".utf8), pool: 1, kind: .file, mode: 0o644, uid: 0,
                    gid: 0, size: id, atime: 0, mtime: 0, ctime: 0, lastAccess: 0, persistent: false,
                    pinnedUntil: 0, expiration: 0, writing: false, durable: true)
    }

    @Test func inodeTableReusesFreedPositionsAndFindsEveryID() {
        var table = InodeTable()
        func record(_ id: EntryID) -> EntryRecord {
            EntryRecord(id: id, parent: 1, name: Data("n\(id)".utf8), pool: 1, kind: .file, mode: 0o644, uid: 0,
                        gid: 0, size: id, atime: 0, mtime: 0, ctime: 0, lastAccess: 0, persistent: false,
                        pinnedUntil: 0, expiration: 0, writing: false, durable: true)
        }
        for id in EntryID(1)...1_000 { table[id] = Inode(record: record(id)) }
        for id in stride(from: EntryID(1), through: 1_000, by: 2) { table[id] = nil }
        for id in EntryID(1_001)...1_500 { table[id] = Inode(record: record(id)) }
        #expect(table.count == 1_000)
        for id in EntryID(1)...1_500 {
            let expected = id > 1_000 || id % 2 == 0
            #expect((table[id]?.record == record(id)) == expected)
        }
    }

    @Test func anInodeKeepsEveryFieldOfItsRecord() {
        let record = EntryRecord(id: 9, parent: nil, name: Data(repeating: 0x61, count: 300), pool: 3,
                                 kind: .symlink, mode: 0o777, uid: 5, gid: 6, size: 7, atime: 8, mtime: 9,
                                 ctime: 10, lastAccess: 11, persistent: true, pinnedUntil: -1, expiration: 12,
                                 writing: true, durable: true, linkCount: 0, blocks: 13, device: 14,
                                 target: Data("there".utf8))
        var inode = Inode(record: record)
        #expect(inode.record == record)
        inode.links = [LinkName(parent: 4, name: Data("b".utf8))]
        var changed = inode.record
        changed.pinnedUntil = 0
        changed.target = nil
        changed.device = 0
        changed.expiration = 0
        inode.record = changed
        #expect(inode.record == changed)
        #expect(inode.links == [LinkName(parent: 4, name: Data("b".utf8))])
        #expect(MemoryLayout<Inode>.stride <= 80)
    }
}

/// A directory's two name tables (own names in 4-byte buckets, links' names in 8-byte ones)
/// against a model, through the same order of steps ``NamespaceState`` takes: a name leaves
/// its table before its inode changes, and enters after.
@Suite struct DirectoryChildrenTests {
    private static let directory: EntryID = 1

    private static func record(_ id: EntryID, named name: String) -> EntryRecord {
        EntryRecord(id: id, parent: directory, name: Data(name.utf8), pool: 1, kind: .file, mode: 0o644, uid: 0,
                    gid: 0, size: 0, atime: 0, mtime: 0, ctime: 0, lastAccess: 0, persistent: false,
                    pinnedUntil: 0, expiration: 0, writing: false, durable: true)
    }

    /// An own name's bucket keeps 8 bits of its hash: a link of the same inode whose hash
    /// shares them, and that probes from the same bucket, must not take the own name's bucket
    /// away when it goes.
    @Test func removingALinkLeavesTheOwnNameWhoseTagItShares() throws {
        // In a table of 8 buckets (one name) a hash's home is its top 3 bits.
        func key(_ name: String) -> UInt32 {
            let hash = DirectoryChildren.hash(of: Data(name.utf8))
            return (hash & 0xFF) | (hash >> 29) << 8
        }
        var seen: [UInt32: String] = [:]
        var pair: (own: String, link: String)?
        for number in 0..<100_000 where pair == nil {
            let name = "c\(number)"
            if let other = seen[key(name)] { pair = (other, name) } else { seen[key(name)] = name }
        }
        let (own, link) = try #require(pair)
        var inodes = InodeTable()
        var children = DirectoryChildren()
        inodes[10] = Inode(record: Self.record(10, named: own))
        inodes.modify(10) { $0.links = [LinkName(parent: Self.directory, name: Data(link.utf8))] }
        let snapshot = inodes
        let slot = try #require(snapshot.slot(of: 10))
        children.insert(10, slot: slot, named: Data(own.utf8), in: Self.directory, inodes: snapshot)
        children.insert(10, slot: slot, named: Data(link.utf8), in: Self.directory, inodes: snapshot)
        #expect(children.count == 2)
        children.remove(slot: slot, named: Data(link.utf8), in: Self.directory, inodes: snapshot)
        #expect(children.count == 1)
        #expect(children.slot(named: Data(own.utf8), in: Self.directory, inodes: snapshot) == slot)
    }

    @Test func ownNamesAndLinksResolveThroughRenamesRemovalsPromotionsAndRebuilds() {
        var inodes = InodeTable()
        var children = DirectoryChildren()
        var model: [String: EntryID] = [:]
        var generator = SystemRandomNumberGenerator()
        var nextID: EntryID = 10
        var nextName = 0
        func freshName() -> String {
            nextName += 1
            return "n\(nextName)"
        }
        func insert(_ name: String, of id: EntryID) {
            let snapshot = inodes
            children.insert(id, slot: snapshot.slot(of: id)!, named: Data(name.utf8), in: Self.directory, inodes: snapshot)
            model[name] = id
        }
        func remove(_ name: String, of id: EntryID) {
            let snapshot = inodes
            children.remove(slot: snapshot.slot(of: id)!, named: Data(name.utf8), in: Self.directory, inodes: snapshot)
            model[name] = nil
        }
        func check() {
            #expect(children.count == model.count)
            for (name, id) in model {
                let slot = children.slot(named: Data(name.utf8), in: Self.directory, inodes: inodes)
                #expect(slot.map { inodes[slot: $0].id } == id, "\(name)")
            }
        }
        for step in 0..<6_000 {
            let names = Array(model.keys)
            switch (names.isEmpty ? 0 : Int.random(in: 0..<10, using: &generator)) {
            case 0, 1, 2:
                let id = nextID
                nextID += 1
                let name = freshName()
                inodes[id] = Inode(record: Self.record(id, named: name))
                insert(name, of: id)
            case 3, 4:
                // Another name in the same directory for an entry: a hard link.
                let id = model[names.randomElement(using: &generator)!]!
                let link = freshName()
                inodes.modify(id) { $0.links.append(LinkName(parent: Self.directory, name: Data(link.utf8))) }
                insert(link, of: id)
            case 5, 6:
                // Removal; the inode's own name removed while it has links promotes the first.
                let name = names.randomElement(using: &generator)!
                let id = model[name]!
                remove(name, of: id)
                let inode = inodes[id]!
                if let position = inode.links.firstIndex(of: LinkName(parent: Self.directory, name: Data(name.utf8))) {
                    inodes.modify(id) { _ = $0.links.remove(at: position) }
                } else if let promoted = inode.links.first {
                    inodes.modify(id) { inode in
                        inode.links.removeFirst()
                        inode.record.name = promoted.name
                    }
                } else {
                    inodes[id] = nil
                }
            default:
                // A rename of the name, own or a link's.
                let name = names.randomElement(using: &generator)!
                let id = model[name]!
                let renamed = freshName()
                remove(name, of: id)
                inodes.modify(id) { inode in
                    let old = LinkName(parent: Self.directory, name: Data(name.utf8))
                    if let position = inode.links.firstIndex(of: old) {
                        inode.links[position] = LinkName(parent: Self.directory, name: Data(renamed.utf8))
                    } else {
                        inode.record.name = Data(renamed.utf8)
                    }
                }
                insert(renamed, of: id)
            }
            if step % 600 == 0 { check() }
        }
        check()
        #expect(model.count > 1_000, "the table grew past several rebuilds: \(model.count) names")
        let gone = (1...nextName).map { "n\($0)" }.filter { model[$0] == nil }
        #expect(!gone.isEmpty)
        for name in gone { #expect(children.slot(named: Data(name.utf8), in: Self.directory, inodes: inodes) == nil) }
    }
}
