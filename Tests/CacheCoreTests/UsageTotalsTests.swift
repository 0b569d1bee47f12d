@testable import CacheCore
import CacheModel
import Foundation
import GRDB
import Glibc
import Testing

/// Usage is kept in the index's `usage` rows by triggers, in the same transaction as the
/// entries: a mount reads those rows (O(pools)), never sums the entries, also after a crash.
@Suite struct UsageTotalsTests {
    @Test func aMountReadsTheUsageRowsNotTheEntries() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300, "b": 200])
        #expect(try index(store).usageTotals()[data] == PoolUsage(cachedBytes: 500, cachedFiles: 2))
        // Rows that differ from the entries show which one a mount read, also after a crash.
        try setUsageRow(store, data, files: 1, bytes: 7)
        let engine = try store.open()
        #expect(engine.names.usage(of: data) == PoolUsage(cachedBytes: 7, cachedFiles: 1))
        engine.simulateCrash()
        _ = Unmanaged.passRetained(engine)
        try store.releaseLockOfCrashedEngine()
        let again = try store.open()
        #expect(again.names.usage(of: data) == PoolUsage(cachedBytes: 7, cachedFiles: 1))
        again.shutdown()
    }

    @Test func afterACrashTheRowsEqualTheCommittedEntries() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300, "gone": 50])
        do {
            let engine = try store.open()
            try writeFile(engine, data, "b", bytes: 200)
            try engine.unlink(parent: data, name: Array("gone".utf8))
            // Open for writing when the daemon dies: recovery drops it, and its usage with it.
            let open = try engine.create(parent: data, name: Array("partial".utf8), mode: 0o644, flags: O_WRONLY,
                                         caller: tester)
            _ = try [UInt8](repeating: 1, count: 1000).withUnsafeBytes { try engine.write(open.handle, offset: 0, bytes: $0) }
            engine.waitForIndex()
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        do {
            let engine = try store.open()
            #expect(engine.names.usage(of: data) == PoolUsage(cachedBytes: 500, cachedFiles: 2))
            #expect(try engine.index.usageTotals()[data] == engine.index.usageByPool()[data])
            engine.shutdown()
        }
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
    }

    @Test func verifyFindsWrongRowsAndRepairSumsTheEntries() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300])
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
        try setUsageRow(store, data, files: 1, bytes: 7)
        let report = try StoreVerifier(storePath: store.path).run(repair: true)
        #expect(report.problems.count == 1 && report.repaired, "\(report.problems)")
        #expect(try index(store).usageTotals()[data] == PoolUsage(cachedBytes: 300, cachedFiles: 1))
        let engine = try store.open()
        #expect(engine.names.usage(of: data) == PoolUsage(cachedBytes: 300, cachedFiles: 1))
        engine.shutdown()
    }

    @Test func rowsWrittenByHandMoveTheTotalsToo() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300])
        try index(store).pool.write { db in
            try db.execute(sql: "UPDATE entry SET size = 1000, persistent = 1 WHERE parent = ?", arguments: [data])
        }
        #expect(try index(store).usageTotals()[data] == PoolUsage(persistentBytes: 1000, persistentFiles: 1))
        try index(store).pool.write { db in
            try db.execute(sql: "UPDATE entry SET parent = NULL WHERE parent = ?", arguments: [data])
        }
        #expect(try index(store).usageTotals()[data] == nil)
    }

    /// A store with these files (name: size) in `data`, cleanly unmounted; and `data`'s id.
    private func cleanlyUnmountedStore(files: [String: Int]) throws -> (TestStore, EntryID) {
        let store = try TestStore()
        let engine = try store.open()
        let data = try engine.pool("data")
        for (name, size) in files.sorted(by: { $0.key < $1.key }) { try writeFile(engine, data, name, bytes: size) }
        engine.shutdown()
        return (store, data)
    }

    private func writeFile(_ engine: CacheEngine, _ parent: EntryID, _ name: String, bytes: Int) throws {
        let created = try engine.create(parent: parent, name: Array(name.utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        let written = try [UInt8](repeating: 1, count: bytes).withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
        #expect(written == bytes)
        try engine.flush(created.handle)
        engine.release(created.handle)
    }

    private func index(_ store: TestStore) throws -> IndexDatabase {
        try IndexDatabase(path: store.path + "/index.sqlite")
    }

    private func setUsageRow(_ store: TestStore, _ pool: EntryID, files: Int64, bytes: Int64) throws {
        try index(store).pool.write { db in
            try db.execute(sql: "UPDATE usage SET files = ?, bytes = ? WHERE pool = ? AND persistent = 0",
                           arguments: [files, bytes, pool])
        }
    }
}
