@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// The namespace's own rules, through the engine's API (no FUSE): lookup, create, rename
/// (replacing, into itself, onto itself), unlink of an open file and link counts. Usage per
/// pool is in NamespaceUsageTests.swift.
@Suite struct NamespaceTests {
    @Test func lookupFindsNamesCountsKernelReferencesAndRefusesBadNames() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let id = try engine.writeFile("f", in: data, content: Array("12345".utf8))
        let before = engine.lookups(of: id)
        let found = try engine.lookup(parent: data, name: Array("f".utf8))
        #expect(found.id == id && found.kind == .file && found.size == 5)
        #expect(engine.lookups(of: id) == before + 1, "a LOOKUP is one kernel reference")
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("g".utf8)) }
        #expect(throws: CacheError.notDirectory) { try engine.lookup(parent: id, name: Array("x".utf8)) }
        #expect(throws: CacheError.invalidName) { try engine.lookup(parent: data, name: Array("a/b".utf8)) }
        #expect(throws: CacheError.nameTooLong) { try engine.lookup(parent: data, name: Array(repeating: 0x61, count: 256)) }
        engine.forget(id, count: before + 1)
        #expect(engine.lookups(of: id) == 0)
        #expect(try engine.lookup(parent: data, name: Array("f".utf8)).id == id, "FORGET drops no name")
    }

    @Test func createMakesAnEmptyOpenFileOwnedByTheCallerAndTouchesItsDirectory() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        clock.advance(seconds: 10)
        let created = try engine.create(parent: data, name: Array("new".utf8), mode: 0o100640, flags: O_WRONLY, caller: tester)
        defer { engine.release(created.handle) }
        let attributes = created.attributes
        #expect(attributes.kind == .file && attributes.size == 0 && attributes.permissions == 0o640)
        #expect(attributes.uid == tester.uid && attributes.gid == tester.gid && attributes.linkCount == 1)
        #expect(try engine.lookup(parent: data, name: Array("new".utf8)).id == attributes.id)
        #expect(try engine.names(in: data) == ["new"])
        #expect(try engine.getattr(data).modificationTime == clock.now(), "a new name changes its directory")
        #expect(throws: CacheError.exists) {
            try engine.create(parent: data, name: Array("new".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        }
        #expect(throws: CacheError.notDirectory) {
            try engine.create(parent: attributes.id, name: Array("x".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        }
        #expect(throws: CacheError.notPermitted) {
            try engine.create(parent: WellKnownEntry.root, name: Array("x".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        }
        engine.waitForIndex()
        #expect(store.objectFiles.count == 1, "refused creates leave no bytes behind")
    }

    /// rename(2) over a file: the target's bytes go (at once if closed, at the last close if
    /// open), its size leaves the pool's usage, and a handle on it still reads it.
    @Test func renameOverAnOpenFileKeepsItsBytesForTheHandleThenDropsThem() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let old = try engine.writeFile("target", in: data, content: Array("old bytes".utf8))
        let new = try engine.writeFile("source", in: data, content: Array("new".utf8))
        let handle = try engine.open(old, flags: O_RDONLY)
        try engine.rename(parent: data, name: Array("source".utf8), newParent: data, newName: Array("target".utf8), flags: [])
        #expect(try engine.lookup(parent: data, name: Array("target".utf8)).id == new)
        #expect(try engine.names(in: data) == ["target"])
        #expect(engine.names.usage(of: data) == PoolUsage(cachedBytes: 3, cachedFiles: 1))
        #expect(engine.names.pendingBytes(of: data) == 9)
        #expect(try engine.getattr(old).linkCount == 0, "the replaced file has no name left")
        engine.waitForIndex()
        #expect(try engine.read(handle, offset: 0, size: 100) == Array("old bytes".utf8))
        #expect(store.hasObject(old), "an open file's bytes stay until its last close")
        engine.release(handle)
        engine.waitForIndex()
        #expect(!store.hasObject(old))
        #expect(engine.names.pendingBytes(of: data) == 0)
        // The row goes in the commit after the unlink (see `discardBytes`): one more wait.
        engine.waitForIndex()
        #expect(try engine.index.entry(old) == nil)
        #expect(try engine.readAll(new) == Array("new".utf8))
    }

    @Test func renameOverAClosedFileDropsItsBytesAfterTheCommit() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let old = try engine.writeFile("target", in: data, content: Array("old bytes".utf8))
        let new = try engine.writeFile("source", in: data, content: Array("new".utf8))
        try engine.rename(parent: data, name: Array("source".utf8), newParent: data, newName: Array("target".utf8), flags: [])
        #expect(engine.names.pendingBytes(of: data) == 0)
        #expect(throws: CacheError.stale) { try engine.open(old, flags: O_RDONLY) }
        engine.waitForIndex()
        #expect(!store.hasObject(old) && store.hasObject(new))
        engine.waitForIndex()
        #expect(try engine.index.entry(old) == nil)
        #expect(try engine.index.usageByPool()[data] == PoolUsage(cachedBytes: 3, cachedFiles: 1))
    }

    @Test func renameOverADirectoryNeedsItEmptyAndOfTheSameKind() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let moved = try engine.mkdir(parent: data, name: Array("moved".utf8), mode: 0o755, caller: tester).id
        try engine.writeFile("inside", in: moved, content: [1])
        let empty = try engine.mkdir(parent: data, name: Array("empty".utf8), mode: 0o755, caller: tester).id
        let full = try engine.mkdir(parent: data, name: Array("full".utf8), mode: 0o755, caller: tester).id
        try engine.writeFile("child", in: full, content: [2])
        try engine.writeFile("file", in: data, content: [3])
        let before = try engine.tree(of: data)
        #expect(throws: CacheError.notEmpty) {
            try engine.rename(parent: data, name: Array("moved".utf8), newParent: data, newName: Array("full".utf8), flags: [])
        }
        #expect(throws: CacheError.notDirectory) {
            try engine.rename(parent: data, name: Array("moved".utf8), newParent: data, newName: Array("file".utf8), flags: [])
        }
        #expect(throws: CacheError.isDirectory) {
            try engine.rename(parent: data, name: Array("file".utf8), newParent: data, newName: Array("empty".utf8), flags: [])
        }
        #expect(throws: CacheError.exists) {
            try engine.rename(parent: data, name: Array("moved".utf8), newParent: data, newName: Array("empty".utf8),
                              flags: .noReplace)
        }
        #expect(try engine.tree(of: data) == before, "a refused rename changes nothing")
        try engine.rename(parent: data, name: Array("moved".utf8), newParent: data, newName: Array("empty".utf8), flags: [])
        #expect(try engine.lookup(parent: data, name: Array("empty".utf8)).id == moved)
        #expect(try engine.tree(of: data) == ["empty": "d", "empty/inside": "f:\u{1}", "full": "d", "full/child": "f:\u{2}",
                                               "file": "f:\u{3}"])
        engine.waitForIndex()
        #expect(try engine.index.entry(empty) == nil, "the replaced directory's row goes")
    }

    @Test func aDirectoryCannotMoveIntoItsOwnSubtree() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let a = try engine.mkdir(parent: data, name: Array("a".utf8), mode: 0o755, caller: tester).id
        let b = try engine.mkdir(parent: a, name: Array("b".utf8), mode: 0o755, caller: tester).id
        let before = try engine.tree(of: data)
        #expect(throws: CacheError.io(EINVAL)) {
            try engine.rename(parent: data, name: Array("a".utf8), newParent: b, newName: Array("c".utf8), flags: [])
        }
        #expect(throws: CacheError.io(EINVAL)) {
            try engine.rename(parent: data, name: Array("a".utf8), newParent: a, newName: Array("c".utf8), flags: [])
        }
        #expect(try engine.tree(of: data) == before)
        // The other way round is an ordinary move.
        try engine.rename(parent: a, name: Array("b".utf8), newParent: data, newName: Array("b".utf8), flags: [])
        #expect(try engine.tree(of: data) == ["a": "d", "b": "d"])
    }

    @Test func renameOntoItselfChangesNothing() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let file = try engine.writeFile("f", in: data, content: Array("same".utf8))
        let directory = try engine.mkdir(parent: data, name: Array("d".utf8), mode: 0o755, caller: tester).id
        try engine.writeFile("g", in: directory, content: [9])
        try engine.rename(parent: data, name: Array("f".utf8), newParent: data, newName: Array("f".utf8), flags: [])
        try engine.rename(parent: data, name: Array("d".utf8), newParent: data, newName: Array("d".utf8), flags: [])
        #expect(try engine.lookup(parent: data, name: Array("f".utf8)).id == file)
        #expect(try engine.lookup(parent: data, name: Array("d".utf8)).id == directory)
        #expect(try engine.tree(of: data) == ["f": "f:same", "d": "d", "d/g": "f:\u{9}"])
        #expect(engine.names.usage(of: data) == PoolUsage(cachedBytes: 5, cachedFiles: 2))
        engine.waitForIndex()
        engine.waitForIndex()
        #expect(store.objectFiles.count == 2 && store.hasObject(file))
    }

    /// unlink(2) of an open file: the name goes at once, the handle still reads, and the
    /// bytes, the pending usage and the row go at the last RELEASE.
    @Test func unlinkOfAnOpenFileTakesTheNameAtOnceAndTheRestAtTheLastRelease() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let id = try engine.writeFile("f", in: data, content: Array("still here".utf8))
        let first = try engine.open(id, flags: O_RDONLY)
        let second = try engine.open(id, flags: O_RDONLY)
        try engine.unlink(parent: data, name: Array("f".utf8))
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("f".utf8)) }
        #expect(try engine.names(in: data).isEmpty)
        // As on ext4, the inode the kernel still holds opens while its bytes are kept.
        let third = try engine.open(id, flags: O_RDONLY)
        engine.release(third)
        #expect(try engine.getattr(id).linkCount == 0)
        #expect(engine.names.usage(of: data) == PoolUsage())
        #expect(engine.names.pendingBytes(of: data) == 10)
        #expect(try engine.read(first, offset: 0, size: 100) == Array("still here".utf8))
        engine.release(first)
        engine.waitForIndex()
        #expect(store.hasObject(id), "one handle is still open")
        #expect(try engine.read(second, offset: 6, size: 100) == Array("here".utf8))
        #expect(try engine.index.entry(id)?.parent == nil, "the row is committed nameless")
        engine.release(second)
        engine.waitForIndex()
        #expect(!store.hasObject(id))
        #expect(engine.names.pendingBytes(of: data) == 0)
        // The kernel's reference from CREATE keeps the nameless inode until FORGET.
        engine.forget(id, count: engine.lookups(of: id))
        #expect(throws: CacheError.notFound) { try engine.getattr(id) }
        engine.waitForIndex()
        #expect(try engine.index.entry(id) == nil)
    }

    @Test func filesHaveOneLinkWhileNamed() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let id = try engine.writeFile("f", in: data, content: [1])
        #expect(try engine.getattr(id).linkCount == 1)
        try engine.rename(parent: data, name: Array("f".utf8), newParent: data, newName: Array("g".utf8), flags: [])
        #expect(try engine.lookup(parent: data, name: Array("g".utf8)).linkCount == 1)
    }

    /// ext4 (and the design, §1: "Directory link counts behave as on ext4") gives a directory
    /// 2 + its number of subdirectories, through mkdir, rmdir and rename.
    @Test func directoriesCountTheirSubdirectoriesAsOnExt4() throws {
        let (store, engine, data) = try openDataPool()
        defer { withExtendedLifetime(store) { engine.shutdown() } }
        let parent = try engine.mkdir(parent: data, name: Array("p".utf8), mode: 0o755, caller: tester).id
        #expect(try engine.getattr(parent).linkCount == 2, "an empty directory: its name and its \".\"")
        try engine.writeFile("f", in: parent, content: [1])
        #expect(try engine.getattr(parent).linkCount == 2, "files add no link to their directory")
        _ = try engine.mkdir(parent: parent, name: Array("s1".utf8), mode: 0o755, caller: tester)
        _ = try engine.mkdir(parent: parent, name: Array("s2".utf8), mode: 0o755, caller: tester)
        #expect(try engine.getattr(parent).linkCount == 4, "each subdirectory's \"..\" is a link")
        #expect(try engine.getattr(data).linkCount == 3)
        let moved = try engine.mkdir(parent: parent, name: Array("s3".utf8), mode: 0o755, caller: tester).id
        try engine.rename(parent: parent, name: Array("s3".utf8), newParent: data, newName: Array("s3".utf8), flags: [])
        #expect(try engine.getattr(parent).linkCount == 4, "a subdirectory moved away takes its link along")
        #expect(try engine.getattr(data).linkCount == 4)
        try engine.rename(parent: parent, name: Array("s2".utf8), newParent: data, newName: Array("s3".utf8), flags: [])
        #expect(try engine.getattr(parent).linkCount == 3, "a directory moved over an empty one")
        #expect(try engine.getattr(data).linkCount == 4)
        #expect(try engine.getattr(moved).linkCount == 0, "the replaced directory, still held by the kernel")
        try engine.rmdir(parent: parent, name: Array("s1".utf8))
        #expect(try engine.getattr(parent).linkCount == 2)
    }

    /// A fresh store, its engine and the id of its `data` pool. The store must outlive the
    /// engine (its deinit removes the directory): shut the engine down inside its lifetime.
    private func openDataPool() throws -> (TestStore, CacheEngine, EntryID) {
        let store = try TestStore()
        let engine = try store.open()
        return (store, engine, try engine.pool("data"))
    }
}
