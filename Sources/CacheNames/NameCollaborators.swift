import CacheModel
import Foundation
import Logging

/// Where ``Names`` hands the index changes it makes, in the order memory made them (the
/// engine's `IndexWriter`). `enqueue` and `waitForCommit` are all a hold needs; the pool changes
/// commit whole before memory changes (`poolChanges` held).
package protocol IndexLog: Sendable {
    func enqueue(_ changes: [IndexChange])
    /// Waits until everything enqueued so far is committed.
    func waitForCommit()
    /// Commits a new pool's row and settings, and waits for the commit.
    func commitNewPool(_ record: EntryRecord, settings: PoolSettings) throws
    /// Commits a pool's settings, and waits for the commit.
    func commitSettings(_ settings: PoolSettings, of pool: EntryID) throws
    /// Queues a pool's settings behind the changes already queued.
    func enqueueSettings(_ settings: PoolSettings, of pool: EntryID)
    /// Queues the origin's version of a fetched file behind the changes already queued.
    func enqueueOriginVersion(of id: EntryID, etag: String?, lastModified: String?)
}

/// The fetches of origin pools as the namespace asks about them (the engine's `FetchTable`):
/// whether a file's bytes count against its pool yet, and whether its fetch is done.
package protocol FetchState: Sendable {
    /// Whether a file's size is in its pool's usage: any file but one whose fetch has not started.
    func countsInUsage(_ id: EntryID) -> Bool
    /// Marks a started fetch as counted; false when it was counted already (or is gone).
    func markCounted(_ id: EntryID) -> Bool
    func isUnfinished(_ id: EntryID) -> Bool
    /// Forgets a fetch that has not started, or a file held in blocks (its file went).
    func dropIfPending(_ id: EntryID)
    /// The bytes of the blocks held of a file held in blocks (what its pool counts of it), else nil.
    func heldBlockBytes(_ id: EntryID) -> Int64?
    /// A file held in blocks is whole: it leaves the fetches, and the held bytes it counted
    /// as blocks are returned (nil for any other file).
    func finishBlocks(_ id: EntryID) -> Int64?
    var isStopping: Bool { get }
}

/// What a pool's replacement policy hears from the namespace, inside the hold that counts
/// the change (the evictor's `ReplacementTable`, a leaf lock).
package protocol ReplacementNotes: Sendable {
    /// A cached file enters its pool's policy, `size` bytes large; `costMilliseconds` is its
    /// own miss cost (`user.cache.cost`), 0 when unknown.
    func inserted(_ id: EntryID, fingerprint: UInt64, size: Int64, costMilliseconds: Int64, pool: EntryID)
    /// A cached file was read. `fingerprint` is asked only when the pool records requests by
    /// name (its simulations of other policies, its access trace): an encrypted store's is an
    /// HMAC, a fifth of the daemon's CPU per hit when computed for every hit.
    func accessed(_ id: EntryID, fingerprint: () -> UInt64, size: Int64, costMilliseconds: Int64, pool: EntryID)
    /// A cached file's size or cost changed (a write, a truncation, `user.cache.cost`, a
    /// finished fetch's time); `previousCostMilliseconds` is the cost it had.
    func resized(_ id: EntryID, size: Int64, costMilliseconds: Int64, previousCostMilliseconds: Int64, pool: EntryID)
    func removed(_ id: EntryID, costMilliseconds: Int64, pool: EntryID)
    /// A pool was created, or its settings changed.
    func apply(_ settings: PoolSettings, to pool: EntryID)
    func removePool(_ pool: EntryID)
}

/// The per-pool counters the namespace moves (the engine's `CounterBook`, a leaf lock).
package protocol NameCounters: Sendable {
    /// `bytes` weighs the request in the byte hit ratio: a hit's file size, a miss's
    /// estimate (the pool's average cached file; the name's own size is unknown).
    func countHit(pool: EntryID, bytes: Int64)
    func countMiss(pool: EntryID, bytes: Int64)
    func takeBackMissOfCreate(pool: EntryID, bytes: Int64)
    func countRemoved(_ files: [EntryRecord])
}

/// Carries out what a namespace change left to do, once the namespace lock is released
/// (see ``NameEffects``): discard bytes, record events, tell the kernel, wake the evictor.
package protocol NameEffectsSink: Sendable {
    func discardBytes(of ids: [EntryID])
    func record(_ events: [CacheEvent])
    func enqueue(_ notifications: [PendingNotification])
    func requestEnforcement(of pools: [EntryID])
}

/// What names a file to its pool's replacement policy (see the engine's `NameFingerprints`).
package protocol NameFingerprinting: Sendable {
    func of(parent: EntryID?, name: Data) -> UInt64
}

/// What ``Names`` starts from: the store's state at mount (usage, pool settings, the id
/// range, unit roots), the access times it shares with the byte store, its memory budget
/// and its environment.
package struct NamesSetup: Sendable {
    package var usage: [EntryID: PoolUsage]
    package var poolSettings: [EntryID: PoolSettings]
    package var ids: IDReservation
    package var unitRoots: Set<EntryID>
    package var access: AccessTracker
    package var fingerprints: any NameFingerprinting
    package var clock: any WallClock
    package var logger: Logger
    /// When idle directories leave memory (`-o memory_budget`, `memory_idle`).
    package var memoryBudget: MemoryBudget

    package init(usage: [EntryID: PoolUsage], poolSettings: [EntryID: PoolSettings], ids: IDReservation,
                 unitRoots: Set<EntryID>, access: AccessTracker, fingerprints: any NameFingerprinting,
                 clock: any WallClock, logger: Logger, memoryBudget: MemoryBudget = MemoryBudget()) {
        self.memoryBudget = memoryBudget
        self.usage = usage
        self.poolSettings = poolSettings
        self.ids = ids
        self.unitRoots = unitRoots
        self.access = access
        self.fingerprints = fingerprints
        self.clock = clock
        self.logger = logger
    }
}
