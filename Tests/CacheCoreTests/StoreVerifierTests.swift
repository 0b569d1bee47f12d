@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// `cachefs verify` when the store's own folders and files cannot be read: it says so, and
/// never takes what it could not read for what is missing.
@Suite struct StoreVerifierTests {
    /// A store with one file in pool `data`, unmounted; the file's id.
    private func storeWithOneFile(_ store: TestStore) throws -> EntryID {
        let engine = try store.open()
        defer { engine.shutdown() }
        return try engine.writeFile("a", in: try engine.pool("data"), content: [1, 2, 3])
    }

    @Test func aSizeThatCannotBeReadIsReported() throws {
        let store = try TestStore()
        let id = try storeWithOneFile(store)
        try TestStore.waitUntilUnlocked(store.path)
        let path = StoreLayout(root: store.path).objectPath(for: id)
        let disk = FaultyDisk()
        disk.failFileSizes.withLock { $0 = [path: EIO] }
        let report = try StoreVerifier(storePath: store.path, disk: disk).run(repair: true)
        #expect(report.problems == [.unreadableBytes(id: id, path: "data/a", reason: String(cString: strerror(EIO)))])
        #expect(report.problems.map(\.description)
                == ["unreadable: data/a (entry \(id)): its size cannot be read (\(String(cString: strerror(EIO))))"])
        // Nothing a repair could do for it is safe: the file and its row stay.
        #expect(store.hasObject(id))
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
    }

    @Test func anObjectsFolderThatCannotBeListedFailsTheCheckAndRepairsNothing() throws {
        let store = try TestStore()
        let id = try storeWithOneFile(store)
        try TestStore.waitUntilUnlocked(store.path)
        let disk = FaultyDisk()
        let folder = StoreLayout(root: store.path).objectDirectory(for: id)
        disk.failListings.withLock { $0 = [folder: EIO] }
        #expect(throws: StoreError.cannotOpen(store.path, "cannot list \(folder): \(String(cString: strerror(EIO)))")) {
            try StoreVerifier(storePath: store.path, disk: disk).run(repair: true)
        }
        // The row of a file whose folder could not be read is no "missing bytes" to drop.
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
        let engine = try store.open()
        defer { engine.shutdown() }
        #expect(try engine.readAll(engine.lookup(parent: engine.pool("data"), name: Array("a".utf8)).id) == [1, 2, 3])
    }
}
