@testable import CacheCore
import CacheModel
import Glibc
import Testing

@Suite struct EngineNamespaceTests {
    @Test func newStoreHasTheDefaultPools() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let names = try engine.readdir(WellKnownEntry.root, offset: 0, limit: 100).map { String(decoding: $0.name, as: UTF8.self) }
        #expect(names == [".", "..", "data", "thumbnails", "avatars"])
        #expect(try engine.text(engine.pool("avatars"), "user.cache.max_age") == "604800")
        #expect(try engine.text(engine.pool("thumbnails"), "user.cache.max_size") == "5242880")
    }

    @Test func writeReadRenameUnlink() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("a", in: data, content: Array("hello".utf8))
        #expect(try engine.readAll(id) == Array("hello".utf8))
        #expect(try engine.text(data, "user.cache.usage") == "5")
        try engine.rename(parent: data, name: Array("a".utf8), newParent: data, newName: Array("b".utf8), flags: [])
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("a".utf8)) }
        #expect(try engine.lookup(parent: data, name: Array("b".utf8)).id == id)
        try engine.unlink(parent: data, name: Array("b".utf8))
        #expect(try engine.text(data, "user.cache.usage") == "0")
        engine.waitForIndex()
        #expect(store.objectFiles.count == 1, "the kernel's lookup of b still holds the inode")
        engine.forget(id, count: 1)
        engine.waitForIndex()
        #expect(store.objectFiles.isEmpty)
    }

    @Test func renameReplacesTargetAndRefusesOtherPools() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.writeFile("old", in: data, content: Array("old!".utf8))
        let new = try engine.writeFile("new", in: data, content: Array("new".utf8))
        try engine.rename(parent: data, name: Array("new".utf8), newParent: data, newName: Array("old".utf8), flags: [])
        #expect(try engine.lookup(parent: data, name: Array("old".utf8)).id == new)
        #expect(try engine.text(data, "user.cache.usage") == "3")
        engine.waitForIndex()
        #expect(store.objectFiles.count == 1)
        #expect(throws: CacheError.crossPool) {
            try engine.rename(parent: data, name: Array("old".utf8), newParent: engine.pool("avatars"),
                              newName: Array("old".utf8), flags: [])
        }
    }

    @Test func filesAtTheRootAreRefusedAndMkdirMakesAPool() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        #expect(throws: CacheError.notPermitted) {
            try engine.create(parent: WellKnownEntry.root, name: Array("f".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        }
        let pool = try engine.mkdir(parent: WellKnownEntry.root, name: Array("music".utf8), mode: 0o755, caller: tester)
        #expect(try engine.text(pool.id, "user.cache.max_size") == String(25 << 20))
    }

    @Test func rmdirOfANonEmptyDirectoryIsRefused() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let dir = try engine.mkdir(parent: data, name: Array("d".utf8), mode: 0o755, caller: tester)
        try engine.writeFile("f", in: dir.id, content: [1])
        #expect(throws: CacheError.notEmpty) { try engine.rmdir(parent: data, name: Array("d".utf8)) }
    }

    @Test func aRemovedFileKeepsItsBytesUntilTheLastClose() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("f", in: data, content: Array(repeating: 7, count: 1000))
        let handle = try engine.open(id, flags: O_RDONLY)
        try engine.unlink(parent: data, name: Array("f".utf8))
        #expect(try engine.text(data, "user.cache.pending_usage") == "1000")
        #expect(try engine.text(data, "user.cache.usage") == "0")
        #expect(try engine.read(handle, offset: 0, size: 2000).count == 1000)
        engine.waitForIndex()
        #expect(store.objectFiles.count == 1)
        engine.release(handle)
        engine.waitForIndex()
        #expect(store.objectFiles.isEmpty)
        #expect(try engine.text(data, "user.cache.pending_usage") == "0")
    }

    @Test func aCachedFileLargerThanItsPoolIsRefused() throws {
        let store = try TestStore()
        let engine = try store.open(overrides: [PoolOverride(name: "small", maxSize: 100, maxAgeSeconds: nil)])
        defer { engine.shutdown() }
        let small = try engine.pool("small")
        #expect(throws: CacheError.fileTooLarge) {
            try engine.writeFile("big", in: small, content: Array(repeating: 1, count: 101))
        }
    }

    @Test func diskFullReachesTheWriterAsENOSPC() throws {
        let store = try TestStore()
        let disk = FaultyDisk()
        let engine = try store.open(disk: disk)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        disk.failWrites.withLock { $0 = ENOSPC }
        #expect(throws: CacheError.io(ENOSPC)) { try engine.writeFile("f", in: data, content: [1, 2, 3]) }
        disk.failWrites.withLock { $0 = nil }
        #expect(try engine.text(data, "user.cache.usage") == "0")
    }
}
