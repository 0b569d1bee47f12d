@testable import CacheCore
import Foundation
import Glibc
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

    @Test func aSecondOpenerOfTheStoreIsRefused() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        #expect(throws: StoreError.alreadyMounted(store.path)) { _ = try store.open() }
    }

    /// The leaked engine of a "crashed" test still holds the store's flock; a new process
    /// would not. Releasing it by closing every descriptor on the lock file is not possible
    /// from here, so the test breaks the lock the way the kernel does on exit.
    private func simulateNewProcess(_ store: TestStore) throws {
        let lockPath = store.path + "/lock"
        try FileManager.default.removeItem(atPath: lockPath)
    }
}
