import CacheModel
import Foundation
import CachePolicy
import Logging

/// What the evictor may ask of the rest of the engine, and nothing more: the pools and
/// their figures, the index's victim queries, a read-only view of cached files for a
/// policy's choice, the one removal seam, and the few waits a pass needs. The engine is the
/// host; a test can be one.
protocol EvictionHost: AnyObject, Sendable {
    var logger: Logger { get }
    var now: Timestamp { get }

    // MARK: Pools and their figures
    func poolSettings() -> [EntryID: PoolSettings]
    func poolNames() -> [EntryID: String]
    func usage(of pool: EntryID) -> PoolUsage
    /// Drops the coldest blocks of `pool`'s files held in blocks, up to `bytes`; returns the bytes freed.
    func dropColdBlocks(of pool: EntryID, bytes: Int64) -> Int64
    /// The pool's files whose write has not ended (left out of the size pass's sums).
    func usageBeingWritten(in pool: EntryID) -> (bytes: Int64, files: Int64, entries: Set<EntryID>)
    /// Open handles: a pressure pass asks for that many more candidates, since open files free nothing.
    var openHandleCount: Int { get }
    /// The candidates no handle holds open (removing an open file frees nothing yet).
    func closedFiles(_ candidates: [EntryRecord]) -> [EntryRecord]
    /// Free and total bytes of the store's filesystem, and the `min_free` it must keep.
    func freeSpace() throws -> (available: Int64, total: Int64)
    func minFree() throws -> MinFree

    // MARK: Candidates
    var victimQueries: any VictimQueries { get }
    /// Runs `body` under the namespace lock (memory only, no I/O), for a policy choosing
    /// victims one by one. `body` gets two lookups, valid only inside it: an entry's record
    /// in memory (nil when memory does not hold it: gone, or its directory is not loaded),
    /// and whether a file in memory may be chosen now (nil when memory does not hold it).
    func withCachedFiles<Result>(
        _ body: (_ inMemory: (EntryID) -> EntryRecord?, _ isEligibleInMemory: (EntryID) -> Bool?) -> Result
    ) -> Result
    /// Loads the directories of entries memory does not hold, outside the namespace lock:
    /// afterwards an id memory does not hold is gone, but for those returned, whose
    /// directory could not be read (logged).
    func loadEntries(_ ids: [EntryID]) -> Set<EntryID>
    /// Runs `body` (a pass: it loads directories and relies on them in later holds) with no
    /// directory unloaded meanwhile (`Names.keepingLoaded`).
    func keepingLoaded<T>(_ body: () throws -> T) rethrows -> T
    /// The name fingerprint a policy keeps for a file (see `ReplacementTable`).
    func fingerprint(of record: EntryRecord) -> UInt64
    /// The same for a name read from the index without its record.
    func fingerprint(parent: EntryID, name: Data) -> UInt64

    // MARK: Acts
    /// The one removal seam: removes the candidates that still qualify, with events and
    /// kernel notifications, and says which went.
    func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                     qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    /// A unit's files, all of them or none (all must still qualify, and no file may have
    /// joined it since it was read); one event names the unit.
    func removeUnit(_ unit: EvictionUnit, as kind: CacheEventKind, reason: String,
                    qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    /// The outermost units of a pool as committed, or nil when it has none (`pending`: reads
    /// not flushed yet; `writing`: files whose write has not ended).
    func units(of pool: EntryID, pending: [EntryID: Int64], writing: Set<EntryID>) throws -> [EvictionUnit]?
    func isEvictable(_ record: EntryRecord, at time: Timestamp) -> Bool
    func isExpired(_ record: EntryRecord, at time: Timestamp) -> Bool
    /// Clears ended pin leases of these files (if they still carry them); returns their pools.
    func endPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID>
    /// Folds gathered access times into memory and the index's rows and waits for the commit.
    func flushAccessTimes()
    /// Appends the access times gathered since the last append to the index's access log
    /// (or folds them, once many files were read): the evictor's periodic step.
    func logAccessTimes()
    /// Access times gathered and not flushed yet, left in place.
    func pendingAccessTimes() -> [EntryID: Int64]
    /// Paths below the mount ("data/photos/a.jpg") of files, for a preview.
    func paths(of records: [EntryRecord]) -> [String]
    /// Waits for the index writer's queue to commit.
    func commitQueued()
    /// Waits until removed files' bytes are gone and their rows committed.
    func waitForIndex()
    func saveCounters()
    /// Runs `body` while no other change of a pool or its settings can run (`Names.poolChanges`),
    /// so settings read and saved back inside it loses no concurrent setfattr.
    func withPoolChangesHeld<Result>(_ body: () -> Result) -> Result
    /// Puts a pool's settings in memory and queues its commit; call within `withPoolChangesHeld`.
    func saveSettings(_ settings: PoolSettings, of pool: EntryID)
    func record(_ events: [CacheEvent])
    /// Appends a pool's recorded accesses to its trace file (`user.cache.trace`).
    func appendTrace(_ lines: [UInt8], droppedLines: Int, of pool: EntryID)
    func retryPendingEvents()
}

/// The index's victim queries the evictor uses (`IndexDatabase` answers them).
protocol VictimQueries: Sendable {
    func leastRecentlyUsed(pool: EntryID, limit: Int, offset: Int) throws -> [EntryRecord]
    func forEachLeastRecentlyUsed(pool: EntryID, batch: Int, _ body: ([EntryRecord]) throws -> Bool) throws
    func olderThan(pool: EntryID, cutoff: Int64, basis: AgeBasis, limit: Int, offset: Int) throws -> [EntryRecord]
    func ownExpirationDue(pool: EntryID, at time: Int64, basis: AgeBasis, limit: Int, offset: Int) throws -> [EntryRecord]
    func earliestExpiry(pool: EntryID, maxAge: Int64, basis: AgeBasis) throws -> Int64?
    func endedLeases(before time: Int64) throws -> [EntryID]
    func cachedFilesByAccess(pool: EntryID) throws -> [IndexDatabase.ResidentRow]
}

extension IndexDatabase: VictimQueries {}
