@testable import CacheCore
import CacheModel
import Foundation
import GRDB
import Testing

/// The writer folds a `.content` change, and an `.update` that keeps the entry's name, into
/// its batch's earlier `.insert` or `.update` of the same entry (`IndexWriter.coalesced`). The oracle is SQLite itself: the same batch,
/// applied as handed over and applied folded, must leave the same rows and usage totals.
@Suite struct IndexCoalescingTests {
    typealias Item = IndexWriter.Item

    @Test func aCreatesRowAndItsFirstWriteCommitAsOneInsert() throws {
        let created = Self.record(id: 100, name: "a", size: 0, writing: true)
        var written = created
        written.size = 1024
        written.blocks = 8
        written.mtime = 77
        written.writing = false
        try expectFolded([.change(.insert(created)), .change(.content(written))], into: 1, firstInserting: written)
    }

    /// Nothing folds across another change of the same entry, or across an action.
    @Test func aContentChangeStaysAfterWhatCameBetween() throws {
        let created = Self.record(id: 100, name: "a", size: 0, writing: true)
        var written = created
        written.size = 10
        written.ctime = 50
        let between: [Item] = [
            .change(.detach(100, ctime: 40)),
            .change(.markDurable(100, mtime: created.mtime)),
            .change(.insertLink(LinkName(parent: WellKnownEntry.root, name: Data("b".utf8)), entry: 100)),
            .action { db in try db.execute(sql: "UPDATE entry SET size = 3 WHERE id = 100") },
        ]
        for item in between {
            let batch: [Item] = [.change(.insert(created)), item, .change(.content(written))]
            #expect(IndexWriter.coalesced(batch).count == 3)
            try expectSameRows(batch)
        }
    }

    /// A directory's mtime moves with each name made in it: one UPDATE per batch, not per name.
    @Test func aDirectorysUpdatesInOneBatchCommitAsOne() throws {
        var directory = Self.record(id: 100, name: "d", size: 0, writing: false)
        directory.kind = .directory
        var batch: [Item] = [.change(.insert(directory))]
        for id in EntryID(101)...105 {
            var file = Self.record(id: id, name: "f\(id)", size: 10, writing: false)
            file.parent = 100
            directory.mtime = id
            directory.ctime = id
            batch += [.change(.insert(file)), .change(.update(directory))]
        }
        try expectFolded(batch, into: 6, firstInserting: directory)
    }

    /// A fetched file is inserted at its lookup (writing) and updated once its bytes are in.
    @Test func aFetchedFilesRowAndItsFinishCommitAsOneInsert() throws {
        let looked = Self.record(id: 100, name: "a", size: 4096, writing: true)
        var finished = looked
        finished.writing = false
        finished.lastAccess = 90
        finished.blocks = 8
        let batch: [Item] = [.change(.insert(looked)), .change(.update(finished))]
        try expectFolded(batch, into: 1, firstInserting: finished)
    }

    /// Two names swapped through a third: an update that leaves its entry under another name
    /// than the row it would fold into stays where it is (moved first, it would take a name
    /// the other entry still holds, and the unique name index would refuse the batch).
    @Test func anUpdateThatRenamesIsNeverMovedEarlier() throws {
        let a = Self.record(id: 100, name: "x", size: 1, writing: false)
        let b = Self.record(id: 101, name: "y", size: 2, writing: false)
        var aAside = a, bToX = b, aToY = a
        aAside.name = Data("t".utf8)
        bToX.name = Data("x".utf8)
        aToY.name = Data("y".utf8)
        let batch: [Item] = [.change(.update(aAside)), .change(.update(bToX)), .change(.update(aToY))]
        #expect(IndexWriter.coalesced(batch).count == 3)
        try expectSameRows(batch, after: [.change(.insert(a)), .change(.insert(b))])
    }

    /// A full-row update writes `last_access` too: it never moves before an access-time flush
    /// of its entry, which would then win.
    @Test func anUpdateStaysAfterAnAccessTimeFlushOfItsEntry() throws {
        let created = Self.record(id: 100, name: "a", size: 1, writing: false)
        var updated = created
        updated.mode = 0o600
        updated.lastAccess = 50
        let batch: [Item] = [.change(.insert(created)), .change(.accessTimes([100: 999])), .change(.update(updated))]
        #expect(IndexWriter.coalesced(batch).count == 3)
        try expectSameRows(batch)
    }

    /// Random batches over a few entries: inserts, full updates, content changes, detaches,
    /// deletes, access times, durable marks and actions, in every order.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func aFoldedBatchLeavesTheRowsTheBatchLeaves(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        var batch: [Item] = []
        var rows: [EntryID: EntryRecord] = [:]
        var nextID: EntryID = 100
        var renames = 0
        func pick(_ limit: Int) -> Int { Int(random.next() % UInt64(limit)) }
        for _ in 0..<60 {
            let existing = rows.keys.sorted()
            let id = existing.isEmpty ? nil : existing[pick(existing.count)]
            switch (pick(8), id) {
            case (0, _), (_, nil):
                let record = Self.record(id: nextID, name: "f\(nextID)", size: Int64(pick(5000)),
                                         writing: pick(2) == 0)
                rows[nextID] = record
                nextID += 1
                batch.append(.change(.insert(record)))
            case (1, let id?):
                var record = rows[id]!
                if pick(4) == 0 {
                    // A name no other entry has had: the batch stays valid as handed.
                    record.name = Data("renamed\(renames)".utf8)
                    renames += 1
                }
                record.mode = UInt32(0o600 + pick(64))
                record.persistent = pick(2) == 0
                record.size = Int64(pick(5000))
                record.ctime = Int64(pick(1000))
                rows[id] = record
                batch.append(.change(.update(record)))
            case (2, let id?), (3, let id?):
                var record = rows[id]!
                record.size = Int64(pick(5000))
                record.blocks = Int64(pick(16))
                record.mtime = Int64(pick(1000))
                record.ctime = Int64(pick(1000))
                record.atime = Int64(pick(1000))
                record.writing = pick(2) == 0
                record.durable = pick(2) == 0
                // A content change carries the whole record; only its own columns may land.
                var carried = record
                carried.mode = 0o777
                carried.lastAccess = -1
                rows[id] = record
                batch.append(.change(.content(carried)))
            case (4, let id?):
                let ctime = Int64(pick(1000))
                rows[id]!.parent = nil
                rows[id]!.ctime = ctime
                batch.append(.change(.detach(id, ctime: ctime)))
            case (5, let id?):
                rows[id] = nil
                batch.append(.change(.delete(id)))
            case (6, let id?):
                batch.append(pick(2) == 0
                    ? .change(.accessTimes([id: Int64(pick(1000))]))
                    : .change(.markDurable(id, mtime: rows[id]!.mtime)))
            case (_, let id?):
                let size = pick(5000)
                batch.append(.action { db in try db.execute(sql: "UPDATE entry SET size = \(size) WHERE id = \(id)") })
            }
        }
        let folded = IndexWriter.coalesced(batch)
        #expect(folded.count < batch.count, "seed \(seed): nothing folded")
        try expectSameRows(batch)
    }

    // MARK: - Support

    private static func record(id: EntryID, name: String, size: Int64, writing: Bool) -> EntryRecord {
        EntryRecord(id: id, parent: WellKnownEntry.root, name: Data(name.utf8), pool: 7, kind: .file, mode: 0o644,
                    uid: 1000, gid: 1000, size: size, atime: 1, mtime: 2, ctime: 3, lastAccess: 4,
                    persistent: false, pinnedUntil: 0, expiration: 0, writing: writing, durable: false)
    }

    /// Applies `batch` as handed over to one index and folded to another, and compares
    /// every entry row and the usage totals the triggers keep.
    /// `batch` folds into `count` items, the first an insert of `row`, and leaves the rows the
    /// batch leaves.
    private func expectFolded(_ batch: [Item], into count: Int, firstInserting row: EntryRecord,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let folded = IndexWriter.coalesced(batch)
        #expect(folded.count == count, "\(folded)", sourceLocation: sourceLocation)
        guard case .change(.insert(let first)) = folded.first else {
            Issue.record("expected an insert first, got \(folded)", sourceLocation: sourceLocation)
            return
        }
        #expect(first == row, sourceLocation: sourceLocation)
        try expectSameRows(batch, sourceLocation: sourceLocation)
    }

    /// `after`: rows both indexes hold first, committed as handed.
    private func expectSameRows(_ batch: [Item], after earlier: [Item] = [],
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try TestStore()
        let asHanded = try IndexDatabase(path: store.path + "/handed.sqlite")
        let folded = try IndexDatabase(path: store.path + "/folded.sqlite")
        try apply(earlier, to: asHanded)
        try apply(earlier, to: folded)
        try apply(batch, to: asHanded)
        try apply(IndexWriter.coalesced(batch), to: folded)
        let expected = try contents(of: asHanded)
        let found = try contents(of: folded)
        #expect(!expected.isEmpty, sourceLocation: sourceLocation)
        #expect(found == expected, sourceLocation: sourceLocation)
    }

    private func apply(_ items: [Item], to index: IndexDatabase) throws {
        try index.write { db in
            for item in items {
                switch item {
                case .change(let change): try change.apply(in: db, of: index)
                case .action(let action): try action(db)
                case .afterCommit: break
                }
            }
        }
    }

    private func contents(of index: IndexDatabase) throws -> [String] {
        try index.pool.read { db in
            let entries = try Row.fetchAll(db, sql: "SELECT * FROM entry WHERE id >= 100 ORDER BY id")
            let usage = try Row.fetchAll(db, sql: "SELECT * FROM usage ORDER BY pool, persistent")
            return (entries + usage).map(\.description)
        }
    }
}
