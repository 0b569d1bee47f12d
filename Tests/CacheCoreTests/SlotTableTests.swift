@testable import CacheCore
import CacheModel
@testable import CacheNames
import Foundation
import Testing

@Suite struct SlotTableTests {
    @Test func slotsUnderOneHashAreEachFoundByTheirOwnComparison() {
        var table = SlotTable()
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

    @Test func manyInsertsAndRemovalsKeepExactlyTheLiveSlots() {
        var table = SlotTable()
        var live: Set<UInt32> = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<20_000 {
            let slot = UInt32.random(in: 0..<2_000, using: &generator)
            let hash = slot &* 2_654_435_761
            if live.contains(slot) {
                let removed = table.remove(slot, hash: hash)
                #expect(removed)
                live.remove(slot)
            } else {
                table.insert(slot, hash: hash)
                live.insert(slot)
            }
            if step % 1_000 == 0 { #expect(Set(table.slots) == live) }
        }
        #expect(table.count == live.count)
        for slot in live { #expect(table.first(hash: slot &* 2_654_435_761) { $0 == slot } == slot) }
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
        #expect(MemoryLayout<Inode>.stride <= 112)
    }
}
