@testable import CacheCore
import CacheModel
import Foundation
import Logging
import Synchronization

/// The engine's own eviction host, with two seams a test sets: a hook that runs right after
/// the next read of the pools' policies (a race made to order), and entries memory does not
/// hold whose directories fail to load, as an index error would.
final class ForwardingEvictionHost: EvictionHost {
    let real: EngineEvictionHost
    /// Runs once, after the next `poolSettings()` read and before its answer is returned.
    let afterNextPoolSettings = Mutex<(@Sendable () -> Void)?>(nil)
    /// Entries `withCachedFiles` does not find in memory and `loadEntries` fails to load.
    let failingLoads = Mutex<Set<EntryID>>([])

    init(_ real: EngineEvictionHost) { self.real = real }

    var logger: Logger { real.logger }
    var now: Timestamp { real.now }

    func poolSettings() -> [EntryID: PoolSettings] {
        let settings = real.poolSettings()
        let hook = afterNextPoolSettings.withLock { hook in
            defer { hook = nil }
            return hook
        }
        hook?()
        return settings
    }

    func poolNames() -> [EntryID: String] { real.poolNames() }
    func usage(of pool: EntryID) -> PoolUsage { real.usage(of: pool) }
    func dropColdBlocks(of pool: EntryID, bytes: Int64) -> Int64 { real.dropColdBlocks(of: pool, bytes: bytes) }
    func usageBeingWritten(in pool: EntryID) -> (bytes: Int64, files: Int64, entries: Set<EntryID>) {
        real.usageBeingWritten(in: pool)
    }
    var openHandleCount: Int { real.openHandleCount }
    func closedFiles(_ candidates: [EntryRecord]) -> [EntryRecord] { real.closedFiles(candidates) }
    func keepingLoaded<T>(_ body: () throws -> T) rethrows -> T { try real.keepingLoaded(body) }
    func freeSpace() throws -> (available: Int64, total: Int64) { try real.freeSpace() }
    func minFree() throws -> MinFree { try real.minFree() }

    var victimQueries: any VictimQueries { real.victimQueries }

    func withCachedFiles<Result>(
        _ body: (_ inMemory: (EntryID) -> EntryRecord?, _ isEligibleInMemory: (EntryID) -> Bool?) -> Result
    ) -> Result {
        let failing = failingLoads.withLock { $0 }
        return real.withCachedFiles { inMemory, isEligibleInMemory in
            withoutActuallyEscaping(inMemory) { inMemory in
                withoutActuallyEscaping(isEligibleInMemory) { isEligibleInMemory in
                    body({ failing.contains($0) ? nil : inMemory($0) },
                         { failing.contains($0) ? nil : isEligibleInMemory($0) })
                }
            }
        }
    }

    func loadEntries(_ ids: [EntryID]) -> Set<EntryID> {
        let failing = failingLoads.withLock { $0 }
        return real.loadEntries(ids.filter { !failing.contains($0) }).union(ids.filter(failing.contains))
    }

    func fingerprint(of record: EntryRecord) -> UInt64 { real.fingerprint(of: record) }
    func fingerprint(parent: EntryID, name: Data) -> UInt64 { real.fingerprint(parent: parent, name: name) }

    func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                     qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>) {
        real.removeFiles(candidates, as: kind, reason: reason, qualifies: qualifies)
    }
    func removeUnit(_ unit: EvictionUnit, as kind: CacheEventKind, reason: String,
                    qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>) {
        real.removeUnit(unit, as: kind, reason: reason, qualifies: qualifies)
    }
    func units(of pool: EntryID, pending: [EntryID: Int64], writing: Set<EntryID>) throws -> [EvictionUnit]? {
        try real.units(of: pool, pending: pending, writing: writing)
    }
    func isEvictable(_ record: EntryRecord, at time: Timestamp) -> Bool { real.isEvictable(record, at: time) }
    func isExpired(_ record: EntryRecord, at time: Timestamp) -> Bool { real.isExpired(record, at: time) }
    func endPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID> { real.endPinLeases(of: ids, at: time) }
    func flushAccessTimes() { real.flushAccessTimes() }
    func logAccessTimes() { real.logAccessTimes() }
    func pendingAccessTimes() -> [EntryID: Int64] { real.pendingAccessTimes() }
    func paths(of records: [EntryRecord]) -> [String] { real.paths(of: records) }
    func commitQueued() { real.commitQueued() }
    func waitForIndex() { real.waitForIndex() }
    func saveCounters() { real.saveCounters() }
    func withPoolChangesHeld<Result>(_ body: () -> Result) -> Result { real.withPoolChangesHeld(body) }
    func saveSettings(_ settings: PoolSettings, of pool: EntryID) { real.saveSettings(settings, of: pool) }
    func record(_ events: [CacheEvent]) { real.record(events) }
    func appendTrace(_ lines: [UInt8], droppedLines: Int, of pool: EntryID) {
        real.appendTrace(lines, droppedLines: droppedLines, of: pool)
    }
    func retryPendingEvents() { real.retryPendingEvents() }
}
