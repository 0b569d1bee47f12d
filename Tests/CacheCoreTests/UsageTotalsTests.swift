@testable import CacheCore
import Foundation
import Glibc
import Testing

/// Usage saved at a clean unmount is what the next mount starts from (O(pools) rows, not a
/// sum of every entry); after a crash, or when `verify` finds the totals wrong, the entries
/// are summed again.
@Suite struct UsageTotalsTests {
    @Test func aCleanUnmountSavesTheUsageTheNextMountStartsFrom() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300, "b": 200])
        let saved = try savedTotals(store)
        #expect(saved?[data] == PoolUsage(cachedBytes: 500, cachedFiles: 2))
        // Totals that differ from the entries show which one a mount read: the saved row.
        try setSavedTotals(store, [data: PoolUsage(cachedBytes: 7, cachedFiles: 1)])
        let engine = try store.open()
        #expect(engine.usage.usage(of: data) == PoolUsage(cachedBytes: 7, cachedFiles: 1))
        engine.shutdown()
    }

    @Test func afterACrashTheEntriesAreSummedAgain() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300])
        do {
            let engine = try store.open()
            try writeFile(engine, data, "b", bytes: 200)
            engine.waitForIndex()
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        let engine = try store.open()
        #expect(engine.usage.usage(of: data) == PoolUsage(cachedBytes: 500, cachedFiles: 2))
        engine.shutdown()
    }

    @Test func verifyFindsWrongTotalsAndRepairMakesTheNextMountSum() throws {
        let (store, data) = try cleanlyUnmountedStore(files: ["a": 300])
        #expect(try StoreVerifier(storePath: store.path).run(repair: false).problems.isEmpty)
        try setSavedTotals(store, [data: PoolUsage(cachedBytes: 7, cachedFiles: 1)])
        let report = try StoreVerifier(storePath: store.path).run(repair: true)
        #expect(report.problems.count == 1 && report.repaired, "\(report.problems)")
        #expect(try savedTotals(store) == nil)
        let engine = try store.open()
        #expect(engine.usage.usage(of: data) == PoolUsage(cachedBytes: 300, cachedFiles: 1))
        engine.shutdown()
    }

    @Test func totalsSurviveTheirTextForm() {
        let usage: [EntryID: PoolUsage] = [2: PoolUsage(cachedBytes: 1, cachedFiles: 2, persistentBytes: 3, persistentFiles: 4),
                                           9: PoolUsage()]
        #expect(UsageTotals.decode(UsageTotals.encode(usage)) == usage)
        #expect(UsageTotals.decode("") == nil)
        #expect(UsageTotals.decode("2:1,2,3") == nil)
        #expect(UsageTotals.decode("2:1,2,3,-4") == nil)
    }

    /// A store with these files (name: size) in `data`, cleanly unmounted; and `data`'s id.
    private func cleanlyUnmountedStore(files: [String: Int]) throws -> (TestStore, EntryID) {
        let store = try TestStore()
        let engine = try store.open()
        let data = try engine.pool("data")
        for (name, size) in files { try writeFile(engine, data, name, bytes: size) }
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

    private func savedTotals(_ store: TestStore) throws -> [EntryID: PoolUsage]? {
        UsageTotals.decode(try IndexStore(path: store.path + "/index.sqlite").setting(UsageTotals.settingKey) ?? "")
    }

    private func setSavedTotals(_ store: TestStore, _ usage: [EntryID: PoolUsage]) throws {
        try IndexStore(path: store.path + "/index.sqlite").setSetting(UsageTotals.settingKey, UsageTotals.encode(usage))
    }
}
