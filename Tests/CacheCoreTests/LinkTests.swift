@testable import CacheCore
@testable import CacheNames
import CacheModel
import CLinux
import Foundation
import Glibc
import Testing

/// Hard links, symlinks and special files in the core, without FUSE.
@Suite struct LinkTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aHardLinkIsOneMoreNameOfTheSameEntryAndTheBytesGoWithTheLastName() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let sub = try engine.mkdir(parent: data, name: bytes("sub"), mode: 0o755, caller: tester).id
        let id = try engine.writeFile("a", in: data, content: bytes("shared"))
        let linked = try engine.link(id, newParent: sub, newName: bytes("b"))
        #expect(linked.id == id && linked.linkCount == 2)
        #expect(try engine.lookup(parent: sub, name: bytes("b")).id == id)
        #expect(try engine.text(data, "user.cache.usage") == "6", "one entry, counted once")
        #expect(try engine.text(data, "user.cache.files") == "1")
        #expect(throws: CacheError.exists) { try engine.link(id, newParent: sub, newName: bytes("b")) }
        #expect(throws: CacheError.notPermitted) { try engine.link(sub, newParent: data, newName: bytes("d")) }
        let thumbnails = try engine.pool("thumbnails")
        #expect(throws: CacheError.crossPool) { try engine.link(id, newParent: thumbnails, newName: bytes("x")) }

        // Removing the entry's first name leaves the link, which reads the same bytes.
        try engine.unlink(parent: data, name: bytes("a"))
        engine.forget(id, count: engine.lookups(of: id))
        #expect(try engine.getattr(id).linkCount == 1)
        #expect(try engine.readAll(id) == bytes("shared"))
        #expect(try engine.text(data, "user.cache.usage") == "6")
        engine.waitForIndex()
        #expect(store.hasObject(id))
        try engine.unlink(parent: sub, name: bytes("b"))
        engine.forget(id, count: engine.lookups(of: id))
        #expect(try engine.text(data, "user.cache.usage") == "0")
        engine.waitForIndex()
        engine.waitForIndex()
        #expect(!store.hasObject(id))
        #expect(try engine.index.entry(id) == nil)
    }

    /// A store with data/left/f and its hard links `links` in data/right, written and closed,
    /// so the next engine starts with no directory loaded.
    private func storeWithLinkedFile(links: [String]) throws -> (store: TestStore, file: EntryID, left: EntryID, right: EntryID) {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let left = try engine.mkdir(parent: data, name: bytes("left"), mode: 0o755, caller: tester).id
        let right = try engine.mkdir(parent: data, name: bytes("right"), mode: 0o755, caller: tester).id
        let file = try engine.writeFile("f", in: left, content: bytes("x"))
        for link in links { _ = try engine.link(file, newParent: right, newName: bytes(link)) }
        return (store, file, left, right)
    }

    @Test func linksAreReadBackFromTheIndexWhicheverDirectoryLoadsFirst() throws {
        let (store, file, left, right) = try storeWithLinkedFile(links: ["g", "h"])
        let ids = (file: file, left: left, right: right)
        do {
            let engine = try store.open()
            // The links' directory first: the entry comes with all three names.
            #expect(try engine.names(in: ids.right).sorted() == ["g", "h"])
            #expect(try engine.getattr(ids.file).linkCount == 3)
            try engine.unlink(parent: ids.left, name: bytes("f"))
            #expect(try engine.names(in: ids.left).isEmpty)
            #expect(try engine.getattr(ids.file).linkCount == 2)
            #expect(try engine.names(in: ids.right).sorted() == ["g", "h"])
            engine.shutdown()
        }
        let report = try StoreVerifier(storePath: store.path).run(repair: false)
        #expect(report.problems.isEmpty, "\(report.problems)")
    }

    /// The entry is in memory through its link only; its own name's directory loads after the
    /// eviction, while the index writer still holds the removal (a long commit window): the
    /// name must not come back from the index as a ghost that no usage counts (found by the
    /// torture links phase as usage drifting below the files present).
    @Test func anEvictedEntryKnownThroughItsLinkLeavesNoGhostInItsOwnDirectory() throws {
        let (store, file, left, right) = try storeWithLinkedFile(links: ["g"])
        let ids = (file: file, left: left, right: right)
        let engine = try store.open(commitWindow: 30)
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        #expect(try engine.lookup(parent: ids.right, name: bytes("g")).id == ids.file)
        // The kernel forgets it, so the removal drops the entry from memory at once.
        engine.forget(ids.file, count: engine.lookups(of: ids.file))
        let record = try engine.names.namespace.withLock { try $0.record(ids.file) }
        #expect(engine.names.removeFiles([record], as: .evicted, reason: "test").files == 1)
        #expect(try engine.names(in: ids.right).isEmpty)
        #expect(try engine.names(in: ids.left).isEmpty, "the evicted name stays gone")
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: ids.left, name: bytes("f")) }
        #expect(try engine.text(data, "user.cache.files") == "0")
    }

    @Test func aListingPageBetweenTwoNamesOfOneEntryResumesAtTheSecond() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let id = try engine.writeFile("a", in: data, content: bytes("1"))
        _ = try engine.link(id, newParent: data, newName: bytes("b"))
        _ = try engine.writeFile("c", in: data, content: bytes("2"))
        var names: [String] = []
        var offset: Int64 = 0
        // One name per page: every cursor falls between two names.
        while true {
            let page = try engine.readdir(data, offset: offset, limit: 1)
            guard let last = page.last else { break }
            names += page.map { String(decoding: $0.name, as: UTF8.self) }
            offset = last.nextOffset
        }
        #expect(names == [".", "..", "a", "b", "c"])
    }

    @Test func evictionRemovesEveryNameOfAnEntryAndTellsTheKernelOfEach() throws {
        let store = try TestStore()
        let notifier = RecordingNotifier()
        let engine = try CacheEngine(EngineConfiguration(
            storePath: store.path, poolOverrides: [PoolOverride(name: "data", maxSize: 1000, maxAgeSeconds: nil)],
            minFree: .bytes(0), clock: ManualClock(), notifier: notifier, accessFlushSeconds: 3600,
            sweepSeconds: 3600, pressureCheckSeconds: 3600))
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let elsewhere = try engine.mkdir(parent: data, name: bytes("elsewhere"), mode: 0o755, caller: tester).id
        let old = try engine.writeFile("old", in: data, content: Array(repeating: 1, count: 600))
        _ = try engine.link(old, newParent: elsewhere, newName: bytes("alias"))
        _ = try engine.writeFile("new", in: data, content: Array(repeating: 2, count: 600))
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: bytes("old")) }
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: elsewhere, name: bytes("alias")) }
        #expect(try engine.text(data, "user.cache.usage") == "600")
        #expect(Shell.waitUntil { notifier.names.sorted() == ["alias", "old"] })
        engine.waitForIndex()
        engine.waitForIndex()
        #expect(!store.hasObject(old))
    }

    @Test func symlinksAndSpecialFilesAreNamesOnlyAndNeverCount() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let link = try engine.symlink(parent: data, name: bytes("s"), target: bytes("../elsewhere/x"), caller: tester)
        #expect(link.kind == .symlink && link.size == 14 && link.linkCount == 1)
        #expect(try engine.readlink(link.id) == bytes("../elsewhere/x"))
        let fifo = try engine.mknod(parent: data, name: bytes("p"), mode: UInt32(S_IFIFO) | 0o640, device: 0,
                                    caller: tester)
        #expect(fifo.kind == .fifo && fifo.permissions == 0o640)
        let device = try engine.mknod(parent: data, name: bytes("c"), mode: UInt32(S_IFCHR) | 0o600,
                                      device: 0x0103, caller: tester)
        #expect(device.kind == .characterDevice && device.device == 0x0103)
        let plain = try engine.mknod(parent: data, name: bytes("f"), mode: UInt32(S_IFREG) | 0o600, device: 0,
                                     caller: tester)
        #expect(plain.kind == .file && plain.size == 0)
        #expect(throws: CacheError.io(EINVAL)) { try engine.readlink(fifo.id) }
        #expect(throws: CacheError.notPermitted) {
            try engine.symlink(parent: WellKnownEntry.root, name: bytes("s"), target: bytes("data"), caller: tester)
        }
        #expect(try engine.text(data, "user.cache.usage") == "0")
        #expect(try engine.text(data, "user.cache.files") == "1", "only the regular file")
        _ = try engine.link(link.id, newParent: data, newName: bytes("s2"))
        try engine.unlink(parent: data, name: bytes("s"))
        #expect(try engine.readlink(link.id) == bytes("../elsewhere/x"))
        engine.waitForIndex()
        #expect(try engine.index.linkCountMismatches().isEmpty)
    }

    @Test func fallocateAppliesEachModeAndThePoolsLimit() throws {
        let store = try TestStore()
        let engine = try store.open(overrides: [PoolOverride(name: "data", maxSize: 1 << 20, maxAgeSeconds: nil)])
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let created = try engine.create(parent: data, name: bytes("f"), mode: 0o644, flags: O_RDWR, caller: tester)
        let handle = created.handle
        try engine.fallocate(handle, mode: 0, offset: 0, length: 65536)
        #expect(try engine.getattr(created.attributes.id).size == 65536)
        #expect(try engine.getattr(created.attributes.id).blocks >= 128)
        #expect(try engine.text(data, "user.cache.usage") == "65536")
        try engine.fallocate(handle, mode: FALLOC_FL_KEEP_SIZE, offset: 65536, length: 65536)
        #expect(try engine.getattr(created.attributes.id).size == 65536, "KEEP_SIZE allocates past the end")
        _ = try [UInt8](repeating: 7, count: 8192).withUnsafeBytes { try engine.write(handle, offset: 0, bytes: $0) }
        try engine.fallocate(handle, mode: FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset: 0, length: 4096)
        let content = try engine.read(handle, offset: 0, size: 8192)
        #expect(content[..<4096].allSatisfy { $0 == 0 } && content[4096...].allSatisfy { $0 == 7 })
        try engine.fallocate(handle, mode: FALLOC_FL_ZERO_RANGE, offset: 4096, length: 4096)
        #expect(try engine.read(handle, offset: 4096, size: 4096).allSatisfy { $0 == 0 })
        #expect(throws: CacheError.fileTooLarge) { try engine.fallocate(handle, mode: 0, offset: 0, length: 2 << 20) }
        #expect(try engine.getattr(created.attributes.id).size == 65536, "a refused fallocate changes nothing")
        #expect(throws: CacheError.io(EOPNOTSUPP)) {
            try engine.fallocate(handle, mode: FALLOC_FL_COLLAPSE_RANGE, offset: 0, length: 4096)
        }
        engine.release(handle)
    }

    @Test func aUsersRemovalKeepsTheInodeOpenableUntilTheKernelForgetsIt() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let data = try engine.pool("data")
        let old = try engine.writeFile("target", in: data, content: bytes("old"))
        _ = try engine.lookup(parent: data, name: bytes("target"))
        _ = try engine.writeFile("tmp", in: data, content: bytes("new"))
        try engine.rename(parent: data, name: bytes("tmp"), newParent: data, newName: bytes("target"), flags: [])
        // The kernel resolved "target" to the old inode just before the rename: it opens.
        #expect(try engine.readAll(old) == bytes("old"))
        #expect(engine.names.pendingBytes(of: data) == 3)
        engine.forget(old, count: 1)
        #expect(engine.names.pendingBytes(of: data) == 0)
        #expect(throws: CacheError.stale) { try engine.open(old, flags: O_RDONLY) }
        engine.waitForIndex()
        engine.waitForIndex()
        #expect(!store.hasObject(old))
    }
}
