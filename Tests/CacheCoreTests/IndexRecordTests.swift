@testable import CacheCore
import CacheModel
import Foundation
import Testing

@Suite struct IndexRecordTests {
    /// Rows are decoded by column position: every field must come back as it was stored,
    /// each with a value no other field has, so a shifted column cannot go unnoticed.
    @Test func anEntryComesBackFieldForField() throws {
        let store = try TestStore()
        let index = try IndexDatabase(path: store.path + "/index.sqlite")
        let stored = EntryRecord(
            id: nil, parent: WellKnownEntry.root, name: Data("ünïcode name".utf8), pool: 7, kind: .file,
            mode: 0o4755, uid: 1001, gid: 1002, size: 123_456, atime: 11, mtime: 12, ctime: 13, lastAccess: 14,
            persistent: true, pinnedUntil: 15, expiration: 16, writing: true, durable: false)
        let inserted = try index.insert(stored)
        #expect(try index.entry(inserted.entryID) == inserted)
        #expect(try index.child(of: WellKnownEntry.root, named: stored.name) == inserted)
        var flipped = inserted
        flipped.persistent = false
        flipped.writing = false
        flipped.durable = true
        flipped.kind = .directory
        flipped.parent = nil
        try index.update(flipped)
        #expect(try index.entry(inserted.entryID) == flipped)
    }
}
