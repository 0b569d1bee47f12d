@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Removed files' bytes are emptied and kept for the next create (`SpareByteFiles`).
@Suite struct SpareByteFilesTests {
    @Test func aRemovedFilesBytesAreTheNextCreatesAndCarryNothingOver() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let old = try engine.writeFile("old", in: data, content: Array("hello, world".utf8))
        let oldInode = try inodeNumber(StoreLayout(root: store.path).objectPath(for: old))
        try engine.unlink(parent: data, name: Array("old".utf8))
        engine.waitForIndex()
        #expect(engine.bytes.spares.count == 1)
        #expect(store.objectFiles.isEmpty)

        let created = try engine.create(parent: data, name: Array("new".utf8), mode: 0o644, flags: O_RDWR, caller: tester)
        #expect(engine.bytes.spares.count == 0)
        let newPath = StoreLayout(root: store.path).objectPath(for: created.attributes.id)
        #expect(try inodeNumber(newPath) == oldInode)
        #expect(try engine.read(created.handle, offset: 0, size: 100) == [])
        _ = try Array("hi".utf8).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
        try engine.flush(created.handle)
        engine.release(created.handle)
        #expect(try engine.readAll(created.attributes.id) == Array("hi".utf8))
        #expect(try engine.getattr(created.attributes.id).size == 2)
    }

    @Test func atMostCapacityWaitAndTheRestAreUnlinked() throws {
        let store = try TestStore()
        let layout = StoreLayout(root: store.path)
        try FileManager.default.createDirectory(atPath: layout.objectDirectory(for: 1), withIntermediateDirectories: true)
        let spares = try SpareByteFiles(layout: layout, disk: PosixDisk(), discard: false, capacity: 2)
        for id: EntryID in 1...3 {
            try Data("bytes".utf8).write(to: URL(fileURLWithPath: layout.objectPath(for: id * 256 + 1)))
        }
        #expect(spares.keep(257) && spares.keep(513))
        #expect(!spares.keep(769))
        #expect(spares.count == 2)
        // Kept ones are empty and gone from their place; the refused one is left to the caller.
        let kept = try FileManager.default.contentsOfDirectory(atPath: layout.sparesPath)
        #expect(kept.count == 2)
        for name in kept { #expect(try PosixDisk().fileSize(layout.sparesPath + "/" + name) == 0) }
        #expect(!FileManager.default.fileExists(atPath: layout.objectPath(for: 257)))
        #expect(FileManager.default.fileExists(atPath: layout.objectPath(for: 769)))
        // Bytes that are already gone are not kept.
        #expect(!spares.keep(1025))
    }

    @Test func theNextMountFindsTheSparesAndAPowerLossDiscardsThem() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            let data = try engine.pool("data")
            for name in ["a", "b", "c"] { try engine.writeFile(name, in: data, content: Array(name.utf8)) }
            for name in ["a", "b", "c"] { try engine.unlink(parent: data, name: Array(name.utf8)) }
            engine.waitForIndex()
            #expect(engine.bytes.spares.count == 3)
            engine.shutdown()
        }
        let layout = StoreLayout(root: store.path)
        let again = try SpareByteFiles(layout: layout, disk: PosixDisk(), discard: false)
        #expect(again.count == 3)
        // A truncation may not have reached the disk before a power loss: none is trusted.
        let afterPowerLoss = try SpareByteFiles(layout: layout, disk: PosixDisk(), discard: true)
        #expect(afterPowerLoss.count == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: layout.sparesPath).isEmpty)
    }

    @Test func aFileMadeFromASpareNeedsItsFolderSyncedUntilASyncfsCoversIt() throws {
        let store = try TestStore()
        let layout = StoreLayout(root: store.path)
        try FileManager.default.createDirectory(atPath: layout.objectDirectory(for: 1), withIntermediateDirectories: true)
        let spares = try SpareByteFiles(layout: layout, disk: PosixDisk(), discard: false)
        for id: EntryID in [1, 257, 513] { try Data().write(to: URL(fileURLWithPath: layout.objectPath(for: id))) }
        #expect(spares.keep(1) && spares.keep(257) && spares.keep(513))
        let first = try #require(spares.take(for: 769))
        close(first)
        #expect(spares.takeUnsyncedRename(of: 769))
        #expect(!spares.takeUnsyncedRename(of: 769))
        let second = try #require(spares.take(for: 1025))
        close(second)
        let covered = spares.syncStarting()
        // Taken while the syncfs runs: not covered by it.
        let third = try #require(spares.take(for: 1281))
        close(third)
        spares.syncDone(covered)
        #expect(!spares.takeUnsyncedRename(of: 1025))
        #expect(spares.takeUnsyncedRename(of: 1281))
        #expect(spares.take(for: 1537) == nil)
    }

    /// A fetch writes through a descriptor of its own: bytes removed while it runs are
    /// unlinked, never handed to the next file (the fetch would write into it).
    @Test func theBytesOfAFetchInFlightAreNeverKept() throws {
        let origin = try TestStore()
        let hold = origin.path + "/hold"
        let script = origin.path + "/origin.sh"
        try Data("held".utf8).write(to: URL(fileURLWithPath: hold))
        try Data("""
            #!/bin/sh
            if [ "$1" = --size ]; then echo 2000000; exit 0; fi
            head -c 1000000 /dev/zero
            while [ -e '\(hold)' ]; do sleep 0.02; done
            head -c 1000000 /dev/zero
            """.utf8).write(to: URL(fileURLWithPath: script))
        chmod(script, 0o755)
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.origin", value: Array("exec:\(script)".utf8), flags: 0)
        let shown = try engine.lookup(parent: data, name: Array("big".utf8))
        let handle = try engine.open(shown.id, flags: O_RDONLY)
        #expect(try engine.read(handle, offset: 0, size: 4096).count == 4096)
        engine.release(handle)
        try engine.unlink(parent: data, name: Array("big".utf8))
        engine.forget(shown.id, count: 1)
        engine.waitForIndex()
        #expect(engine.bytes.spares.count == 0)
        #expect(store.objectFiles.isEmpty)
        try FileManager.default.removeItem(atPath: hold)
    }

    private func inodeNumber(_ path: String) throws -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CacheError.io(errno) }
        return UInt64(info.st_ino)
    }
}
