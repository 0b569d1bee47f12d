@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Usage per pool: cached and persistent bytes and files, pinned files and pending bytes,
/// moved by create, write, truncate, flag changes, rename and unlink. Each figure is read
/// three ways: the ledger in memory, the `user.cache.*` figures, and (once the file is
/// closed) the index's entry sums and its usage rows, which the next mount reads, which must agree.
@Suite struct NamespaceUsageTests {
    @Test func usageFollowsWritesTruncationFlagsRenamesAndUnlinks() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let thumbnails = try engine.pool("thumbnails")

        let created = try engine.create(parent: data, name: Array("f".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        let id = created.attributes.id
        try expectUsage(engine, data, PoolUsage(cachedFiles: 1), closed: false)
        _ = try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1), closed: false)
        // Rewriting bytes already counted adds nothing.
        _ = try [UInt8](repeating: 2, count: 50).withUnsafeBytes { try engine.write(created.handle, offset: 10, bytes: $0) }
        try engine.flush(created.handle)
        engine.release(created.handle)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1))

        _ = try engine.setattr(id, changes: AttributeChanges(size: 40), handle: nil)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 40, cachedFiles: 1))
        _ = try engine.setattr(id, changes: AttributeChanges(size: 70), handle: nil)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 70, cachedFiles: 1))

        try engine.setxattr(id, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        try expectUsage(engine, data, PoolUsage(persistentBytes: 70, persistentFiles: 1))
        let handle = try engine.open(id, flags: O_WRONLY)
        _ = try [UInt8](repeating: 3, count: 30).withUnsafeBytes { try engine.write(handle, offset: 70, bytes: $0) }
        try engine.flush(handle)
        engine.release(handle)
        try expectUsage(engine, data, PoolUsage(persistentBytes: 100, persistentFiles: 1))
        try engine.setxattr(id, name: "user.cache.persistent", value: Array("0".utf8), flags: 0)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1))

        // Pinned files stay counted against max_size; only `pinned_files` tells them apart.
        try engine.setxattr(id, name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1), pinned: 1)
        #expect(try engine.text(id, "user.cache.state") == "pinned")

        let sub = try engine.mkdir(parent: data, name: Array("sub".utf8), mode: 0o755, caller: tester).id
        try engine.rename(parent: data, name: Array("f".utf8), newParent: sub, newName: Array("g".utf8), flags: [])
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1), pinned: 1)
        #expect(throws: CacheError.crossPool) {
            try engine.rename(parent: sub, name: Array("g".utf8), newParent: thumbnails, newName: Array("g".utf8), flags: [])
        }
        #expect(try engine.lookup(parent: sub, name: Array("g".utf8)).id == id)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 100, cachedFiles: 1), pinned: 1)
        try expectUsage(engine, thumbnails, PoolUsage())

        // A flag on a directory covers what is beneath it, and what is created there later.
        try engine.setxattr(sub, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        try expectUsage(engine, data, PoolUsage(persistentBytes: 100, persistentFiles: 1), pinned: 1)
        try engine.writeFile("h", in: sub, content: Array(repeating: 4, count: 20))
        try expectUsage(engine, data, PoolUsage(persistentBytes: 120, persistentFiles: 2), pinned: 1)

        try engine.unlink(parent: sub, name: Array("g".utf8))
        try expectUsage(engine, data, PoolUsage(persistentBytes: 20, persistentFiles: 1))
        try engine.unlink(parent: sub, name: Array("h".utf8))
        try expectUsage(engine, data, PoolUsage())
        #expect(engine.names.pendingBytes(of: data) == 100, "g's bytes wait for the kernel to forget it")
        engine.forget(id, count: engine.lookups(of: id))
        #expect(engine.names.pendingBytes(of: data) == 0)
    }

    /// A flag set on a directory is copied to everything beneath it, and only that flag: a
    /// file's own pin and expiration survive `persistent` set (and unset) on its directory.
    @Test func aFlagSetOnADirectoryLeavesTheOtherFlagsBeneathAlone() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let directory = try engine.mkdir(parent: data, name: Array("d".utf8), mode: 0o755, caller: tester).id
        let file = try engine.writeFile("f", in: directory, content: [1, 2, 3])
        try engine.setxattr(file, name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        try engine.setxattr(file, name: "user.cache.expiration", value: Array("1h".utf8), flags: 0)
        try engine.setxattr(directory, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        #expect(try engine.text(file, "user.cache.persistent") == "1")
        #expect(try engine.text(file, "user.cache.pinned") == "1")
        #expect(try engine.text(file, "user.cache.expiration") == "3600")
        try engine.setxattr(directory, name: "user.cache.persistent", value: Array("0".utf8), flags: 0)
        #expect(try engine.text(file, "user.cache.state") == "pinned")
        try engine.setxattr(directory, name: "user.cache.expiration", value: Array("2h".utf8), flags: 0)
        #expect(try engine.text(file, "user.cache.expiration") == "7200")
        #expect(try engine.text(file, "user.cache.pinned") == "1")
        engine.waitForIndex()
        let row = try #require(try engine.index.entry(file))
        #expect(row.pinnedUntil != 0 && row.expiration == 7200 && !row.persistent)
        try expectUsage(engine, data, PoolUsage(cachedBytes: 3, cachedFiles: 1), pinned: 1)
    }

    /// A write into a file whose name is gone counts as pending, never as usage, and leaves
    /// with the last close.
    @Test func writesIntoAnUnlinkedOpenFileArePendingNotUsage() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let created = try engine.create(parent: data, name: Array("f".utf8), mode: 0o644, flags: O_RDWR, caller: tester)
        _ = try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
        try engine.unlink(parent: data, name: Array("f".utf8))
        _ = try [UInt8](repeating: 2, count: 15).withUnsafeBytes { try engine.write(created.handle, offset: 10, bytes: $0) }
        #expect(engine.names.usage(of: data) == PoolUsage())
        #expect(engine.names.pendingBytes(of: data) == 25)
        #expect(try engine.text(data, "user.cache.pending_usage") == "25")
        engine.release(created.handle)
        #expect(engine.names.pendingBytes(of: data) == 25, "the kernel still holds the inode from CREATE")
        engine.forget(created.attributes.id, count: 1)
        #expect(engine.names.pendingBytes(of: data) == 0)
        engine.waitForIndex()
        #expect(store.objectFiles.isEmpty)
    }

    /// Checks the ledger and the `user.cache.*` figures, and, when the file is closed (its size
    /// handed to the writer), that the index sums the same after a commit.
    private func expectUsage(_ engine: CacheEngine, _ pool: EntryID, _ expected: PoolUsage, pinned: Int64 = 0,
                             closed: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(engine.names.usage(of: pool) == expected, "ledger", sourceLocation: sourceLocation)
        #expect(try engine.text(pool, "user.cache.usage") == String(expected.cachedBytes), sourceLocation: sourceLocation)
        #expect(try engine.text(pool, "user.cache.persistent_usage") == String(expected.persistentBytes),
                sourceLocation: sourceLocation)
        #expect(try engine.text(pool, "user.cache.files") == String(expected.cachedFiles + expected.persistentFiles),
                sourceLocation: sourceLocation)
        guard closed else { return }
        engine.waitForIndex()
        #expect(try engine.index.usageByPool()[pool] ?? PoolUsage() == expected, "index", sourceLocation: sourceLocation)
        #expect(try engine.index.usageTotals()[pool] ?? PoolUsage() == expected, "usage rows", sourceLocation: sourceLocation)
        #expect(try engine.text(pool, "user.cache.pinned_files") == String(pinned), sourceLocation: sourceLocation)
    }
}
