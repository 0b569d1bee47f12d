import CacheModel
@testable import CacheNames
import Foundation
import Testing

/// The packed ``Inode``: its size, and that every record it is given comes back exactly.
@Suite struct InodeTests {
    static func record(id: EntryID = 9, parent: EntryID? = 4, name: Data = Data("name".utf8), pool: EntryID = 3,
                       kind: EntryKind = .file, mode: UInt32 = 0o644, uid: UInt32 = 1000, gid: UInt32 = 1000,
                       size: Int64 = 5, atime: Int64 = 6, mtime: Int64 = 7, ctime: Int64 = 8,
                       lastAccess: Int64 = 10, persistent: Bool = false, pinnedUntil: Int64 = 0,
                       expiration: Int64 = 0, writing: Bool = false, durable: Bool = true, linkCount: UInt32 = 1,
                       blocks: Int64 = 8, device: UInt64 = 0, target: Data? = nil,
                       costMilliseconds: Int64 = 0) -> EntryRecord {
        EntryRecord(id: id, parent: parent, name: name, pool: pool, kind: kind, mode: mode, uid: uid, gid: gid,
                    size: size, atime: atime, mtime: mtime, ctime: ctime, lastAccess: lastAccess,
                    persistent: persistent, pinnedUntil: pinnedUntil, expiration: expiration, writing: writing,
                    durable: durable, linkCount: linkCount, blocks: blocks, device: device, target: target,
                    costMilliseconds: costMilliseconds)
    }

    /// Records at the edges of what ``EntryRecord`` allows, each alone and all at once.
    static let edgeRecords: [EntryRecord] = [
        record(),
        record(size: .max, blocks: .max),
        record(size: .min, atime: .min, mtime: .min, ctime: .min, lastAccess: .min, blocks: .min),
        record(size: 0, atime: -1, mtime: -1_000_000_000, ctime: -86_400 * 1_000_000_000 * 365, lastAccess: -1),
        record(atime: .max, mtime: .max, ctime: .max, lastAccess: .max),
        record(pool: .max), record(pool: .min), record(pool: 0), record(pool: -1),
        record(pool: EntryID(UInt32.max)), record(pool: EntryID(UInt32.max) - 1), record(pool: EntryID(UInt32.max) + 1),
        record(blocks: Int64(UInt32.max)), record(blocks: Int64(UInt32.max) - 1), record(blocks: Int64(UInt32.max) + 1),
        record(blocks: -1),
        record(parent: nil), record(parent: 0), record(parent: 1), record(parent: .max),
        record(parent: EntryID(UInt32.max)), record(parent: EntryID(UInt32.max) - 1),
        record(parent: EntryID(UInt32.max) - 2), record(parent: EntryID(UInt32.max) + 1),
        record(id: 0), record(id: 1), record(id: .max), record(id: EntryID(UInt32.max)),
        record(id: EntryID(UInt32.max) - 1), record(id: EntryID(UInt32.max) + 1),
        record(mode: 0), record(mode: 0o7777), record(mode: 0xFFFE), record(mode: 0xFFFF), record(mode: 0x1_0000),
        record(mode: .max),
        record(uid: .max, gid: .max), record(uid: 0, gid: 0),
        record(linkCount: 0), record(linkCount: .max),
        record(kind: .directory, linkCount: 2), record(kind: .fifo), record(kind: .socket),
        record(kind: .characterDevice, device: 0x0501), record(kind: .blockDevice, device: .max),
        record(kind: .symlink, mode: 0o777, size: 5, target: Data("there".utf8)),
        record(kind: .symlink, target: Data(repeating: 0x2F, count: 4_096)),
        record(kind: .symlink, target: Data()),
        record(persistent: true), record(writing: true), record(durable: false),
        record(persistent: true, pinnedUntil: -1), record(pinnedUntil: .max), record(pinnedUntil: .min),
        record(expiration: 60), record(expiration: .max), record(expiration: -1),
        record(costMilliseconds: 1), record(costMilliseconds: Int64(UInt32.max) - 1),
        record(costMilliseconds: Int64(UInt32.max)), record(costMilliseconds: Int64(UInt32.max) + 1),
        record(costMilliseconds: .max), record(costMilliseconds: -1), record(costMilliseconds: .min),
        record(parent: -1), record(parent: .min),
        // The 16-bit fields and the block count that follows the size, at their edges.
        record(costMilliseconds: 65_534), record(costMilliseconds: 65_535), record(costMilliseconds: 65_536),
        record(linkCount: 65_534), record(linkCount: 65_535), record(linkCount: 65_536),
        record(linkCount: 254), record(linkCount: 255), record(linkCount: 256),
        // The size's 48 bits beside the cost.
        record(size: 1 << 48 - 2, blocks: 0), record(size: 1 << 48 - 1, blocks: 0), record(size: 1 << 48, blocks: 0),
        record(size: 1 << 48 - 1, costMilliseconds: 65_535), record(size: 1 << 48 - 2, costMilliseconds: 65_534),
        record(size: 5, blocks: 0), record(size: 5, blocks: 16), record(size: 0, blocks: 0), record(size: 0, blocks: 8),
        record(size: 4_096, blocks: 8), record(size: 4_097, blocks: 16), record(size: 4_097, blocks: 8),
        record(size: .max - 4_095, blocks: (.max - 4_095 + 4_095) / 4_096 * 8), record(size: .max - 4_094, blocks: 0),
        record(size: -1, blocks: 0),
        record(name: Data()), record(name: Data(repeating: 0x61, count: 14)), record(name: Data(repeating: 0x62, count: 255)),
        record(id: .max, parent: .min, name: Data(repeating: 0xFF, count: 300), pool: .min, kind: .blockDevice,
               mode: .max, uid: .max, gid: .max, size: .min, atime: .max, mtime: .min, ctime: -1, lastAccess: .max,
               persistent: true, pinnedUntil: .max, expiration: .min, writing: true, durable: true,
               linkCount: .max, blocks: .max, device: .max, target: Data("t".utf8),
               costMilliseconds: .max),
    ]

    @Test(arguments: [false, true])
    func everyRecordComesBackExactly(profileTableIsFull: Bool) {
        for record in Self.edgeRecords {
            let inode = Inode(record: record, profileTableIsFull: profileTableIsFull)
            #expect(inode.record == record)
            #expect(inode.id == record.entryID)
            #expect(inode.parent == record.parent)
            #expect(inode.isWriting == record.writing)
            #expect(inode.isDirectory == (record.kind == .directory))
        }
    }

    @Test func everyRecordSetOverAnotherComesBackExactly() {
        for before in Self.edgeRecords {
            var inode = Inode(record: before)
            inode.lookups = 3
            inode.openHandles = 2
            inode.writers = 1
            inode.keptUntilUnreferenced = true
            inode.links = [LinkName(parent: 4, name: Data("b".utf8))]
            for after in Self.edgeRecords {
                var changed = after
                changed.id = before.id
                inode.record = changed
                #expect(inode.record == changed)
                #expect(inode.id == before.entryID)
                #expect(inode.lookups == 3 && inode.openHandles == 2 && inode.writers == 1)
                #expect(inode.keptUntilUnreferenced)
                #expect(inode.links == [LinkName(parent: 4, name: Data("b".utf8))])
            }
            inode.record = before
            #expect(inode.record == before)
        }
    }

    @Test func theCountersKeepTheirWholeRange() {
        for record in [Self.record(), Self.edgeRecords.last!] {
            var inode = Inode(record: record)
            for value: UInt64 in [0, 1, 65_534, 65_535, 65_536, 3, UInt64(UInt32.max) - 1, UInt64(UInt32.max),
                                  UInt64(UInt32.max) + 1, UInt64(UInt32.max) * 3, .max - 1, .max, 2, 0] {
                inode.lookups = value
                #expect(inode.lookups == value)
                #expect(inode.isReferenced == (value > 0))
                #expect(inode.record == record)
            }
            for start: UInt64 in [65_533, UInt64(UInt32.max) - 2] {
                inode.lookups = start
                for _ in 0..<5 { inode.lookups += 1 }
                #expect(inode.lookups == start + 5)
                for _ in 0..<5 { inode.lookups -= 1 }
                #expect(inode.lookups == start)
            }
            inode.lookups = .max
            inode.lookups -= min(UInt64.max, inode.lookups)
            #expect(inode.lookups == 0 && !inode.isReferenced)
            for value: Int32 in [.max, .min, 0, 1, 253, 254, 255, 256, 65_534, 65_535, 65_536, -1, 2, 0] {
                inode.openHandles = value
                inode.writers = value
                #expect(inode.openHandles == value && inode.writers == value)
            }
            // One at a time across the narrow limits, as opens and closes move them.
            for _ in 0..<70_000 {
                inode.openHandles += 1
                inode.writers += 1
            }
            #expect(inode.openHandles == 70_000 && inode.writers == 70_000)
            for _ in 0..<70_000 {
                inode.openHandles -= 1
                inode.writers -= 1
            }
            #expect(inode.openHandles == 0 && inode.writers == 0)
            #expect(inode.record == record)
        }
    }

    @Test func namesAndLinksFollowTheRecord() {
        let far = EntryID(UInt32.max) + 7
        var inode = Inode(record: Self.record(parent: far, name: Data("a".utf8)))
        inode.links = [LinkName(parent: far, name: Data("b".utf8)), LinkName(parent: 2, name: Data("c".utf8))]
        #expect(inode.isNamed(Data("a".utf8), in: far))
        #expect(inode.isNamed(Data("b".utf8), in: far))
        #expect(!inode.isNamed(Data("a".utf8), in: 2))
        #expect(inode.nameCount(in: far) == 2)
        #expect(inode.names(in: far) == [Data("a".utf8), Data("b".utf8)])
        #expect(inode.names.count == 3)
        var removed = inode.record
        removed.parent = nil
        inode.record = removed
        #expect(!inode.hasName && inode.parent == nil && inode.names.isEmpty)
        #expect(inode.nameCount(in: far) == 1)
    }

    @Test func theInodeIsPacked() {
        let stride = MemoryLayout<Inode>.stride
        print("Inode: size \(MemoryLayout<Inode>.size), stride \(stride)")
        #expect(stride <= 80)
    }

    /// Inodes alike in pool, owner, group and mode share one profile, and one that no
    /// longer fits the table keeps its fields itself, at the cost of its extras.
    @Test func inodesShareTheirProfileAndKeepItThemselvesOnceTheTableIsFull() {
        let pool = EntryID.random(in: 1_000_000...EntryID.max)
        let first = Inode(record: Self.record(id: 1, pool: pool))
        #expect(first.heapBytes == 0, "the profile is in the table, not in the inode's extras")
        let kept = Inode(record: Self.record(pool: pool), profileTableIsFull: true)
        #expect(kept.heapBytes > 0)
        #expect(kept.record == Self.record(pool: pool))

        let table = InodeProfiles(limit: 2)
        let profiles = (0..<3).map { InodeProfile(pool: 3, uid: UInt32($0), gid: 0, mode: 0o644) }
        #expect(table.number(for: profiles[0]) == 0)
        #expect(table.number(for: profiles[1]) == 1)
        #expect(table.number(for: profiles[2]) == nil)
        #expect(table.number(for: profiles[0]) == 0)
        #expect(table.profile(1) == profiles[1])
        #expect(table.count == 2)
    }
}
