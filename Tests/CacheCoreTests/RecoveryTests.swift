@testable import CacheCore
@testable import CacheNames
import CacheModel
import Foundation
import Glibc
import Logging
import Synchronization
import Testing

@Suite struct RecoveryTests {
    @Test func aCachedFileCaughtMidWriteIsDroppedAndClosedFilesStay() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            let data = try engine.pool("data")
            try engine.writeFile("done", in: data, content: Array("complete".utf8))
            // Closed more than one commit window before the crash.
            engine.waitForIndex()
            let torn = try engine.create(parent: data, name: Array("torn".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
            _ = try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try engine.write(torn.handle, offset: 0, bytes: $0) }
            // No release and no shutdown: the index still says "being written".
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try simulateNewProcess(store)
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("torn".utf8)) }
        let done = try engine.lookup(parent: data, name: Array("done".utf8))
        #expect(try engine.readAll(done.id) == Array("complete".utf8))
        #expect(try engine.text(data, "user.cache.usage") == "8")
        #expect(store.objectFiles.count == 1)
    }

    /// A stop between a persistent file's entry and its bytes (CREATE had not answered)
    /// drops the entry: keeping it would leave a name without bytes, which verify reports.
    @Test func aPersistentFileCutBeforeItsBytesExistedIsDropped() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            let data = try engine.pool("data")
            let keep = try engine.mkdir(parent: data, name: Array("keep".utf8), mode: 0o755, caller: tester).id
            try engine.setxattr(keep, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
            try engine.writeFile("kept", in: keep, content: Array("persistent".utf8))
            let cut = try engine.create(parent: keep, name: Array("cut".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
            // Both rows committed; only the bytes of "cut" are missing.
            engine.waitForIndex()
            try FileManager.default.removeItem(atPath: StoreLayout(root: store.path).objectPath(for: cut.attributes.id))
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try simulateNewProcess(store)
        let engine = try store.open()
        defer { engine.shutdown() }
        let keep = try engine.lookup(parent: try engine.pool("data"), name: Array("keep".utf8)).id
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: keep, name: Array("cut".utf8)) }
        let kept = try engine.lookup(parent: keep, name: Array("kept".utf8))
        #expect(try engine.readAll(kept.id) == Array("persistent".utf8))
        #expect(store.objectFiles.count == 1)
    }

    /// Two creates race: the first takes its id, the second takes the next one and commits
    /// before the first's row does, then the daemon dies. The first file's bytes exist with
    /// no row, under an id below the highest committed one: recovery must still remove them.
    /// With `atRangeEnd`, the first id is the last of its reserved range and the second opens
    /// (and commits) the next range.
    @Test(arguments: [false, true])
    func bytesOfACreateOvertakenByALaterIdAreRemovedAfterACrash(atRangeEnd: Bool) throws {
        let store = try TestStore()
        let disk = FaultyDisk()
        let overtaking = Mutex<EntryID?>(nil)
        let slow: EntryID
        let rangeEnd: EntryID
        do {
            // A long window: nothing commits but the waits below.
            let engine = try store.open(disk: disk, commitWindow: 3600)
            // Their rounds flush the writer: one could commit "slow" before the crash.
            engine.evictor.stop()
            engine.files.durability.stop()
            let data = try engine.pool("data")
            if atRangeEnd {
                _ = try engine.names.takeID()
                while engine.names.ids.withLock({ $0.reservedBelow - $0.next }) > 1 { _ = try engine.names.takeID() }
            }
            rangeEnd = engine.names.ids.withLock { $0.reservedBelow }
            engine.waitForIndex()
            // Runs inside the first create, after it took its id and before its bytes exist:
            // another thread's create is made and committed whole meanwhile.
            disk.beforeNextOpen.withLock { hook in
                hook = {
                    do {
                        let id = try engine.writeFile("fast", in: data, content: Array("fast".utf8))
                        engine.waitForIndex()
                        overtaking.withLock { $0 = id }
                    } catch {
                        Issue.record("the overtaking create failed: \(error)")
                    }
                }
            }
            let created = try engine.create(parent: data, name: Array("slow".utf8), mode: 0o644, flags: O_WRONLY,
                                            caller: tester)
            slow = created.attributes.id
            _ = try Array("slow".utf8).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
            try engine.flush(created.handle)
            engine.release(created.handle)
            // Dies within the commit window of "slow": its row never reaches the index.
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        let fast = try #require(overtaking.withLock { $0 })
        #expect(fast > slow, "the race did not happen as arranged")
        #expect(!atRangeEnd || (slow == rangeEnd - 1 && fast == rangeEnd), "ids on either side of a range's end")
        #expect(store.hasObject(slow) && store.hasObject(fast))
        try simulateNewProcess(store)
        do {
            let engine = try store.open()
            defer { engine.shutdown() }
            let data = try engine.pool("data")
            #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("slow".utf8)) }
            #expect(try engine.readAll(engine.lookup(parent: data, name: Array("fast".utf8)).id) == Array("fast".utf8))
            #expect(!store.hasObject(slow), "bytes without an entry survived recovery")
        }
        let report = try StoreVerifier(storePath: store.path).run(repair: false)
        #expect(report.problems.isEmpty, "verify found \(report.problems)")
    }

    /// After a power loss recovery walks the objects folders: only a folder that is not there
    /// holds no orphans; one that cannot be read fails the mount rather than pass unchecked.
    @Test func anObjectsFolderThatCannotBeListedFailsTheWalkForOrphans() throws {
        let store = try TestStore()
        let id: EntryID
        do {
            let engine = try store.open()
            defer { engine.shutdown() }
            id = try engine.writeFile("a", in: try engine.pool("data"), content: [1])
        }
        let layout = StoreLayout(root: store.path)
        let folder = layout.objectDirectory(for: id)
        let disk = FaultyDisk()
        let recovery = Recovery(index: try IndexDatabase(path: layout.indexPath), layout: layout, disk: disk,
                                logger: Logger(label: "test"))
        for code in [EIO, EACCES] {
            disk.failListings.withLock { $0 = [folder: code] }
            let expected = StoreError.cannotOpen(store.path, "cannot list \(folder) to remove bytes without an index entry: \(String(cString: strerror(code)))")
            #expect(throws: expected) { try recovery.removeOrphanBytes() }
        }
        disk.failListings.withLock { $0 = [folder: ENOENT] }
        try recovery.removeOrphanBytes()
        #expect(store.hasObject(id))
    }

    @Test func aSecondOpenerOfTheStoreIsRefused() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        #expect(throws: StoreError.alreadyMounted(store.path)) { _ = try store.open(waitingForLock: false) }
    }

    /// The leaked engine of a "crashed" test still holds the store's flock; a new process
    /// would not. Releasing it by closing every descriptor on the lock file is not possible
    /// from here, so the test breaks the lock the way the kernel does on exit.
    private func simulateNewProcess(_ store: TestStore) throws {
        let lockPath = store.path + "/lock"
        try FileManager.default.removeItem(atPath: lockPath)
    }
}
