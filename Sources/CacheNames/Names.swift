import CacheModel
import CachePolicy
import Foundation
import Logging
import Synchronization

/// The owner of names and metadata: the namespace (entries, names, kernel references),
/// each pool's usage and settings, entry ids and gathered access times. A change is decided
/// under the namespace lock, where memory changes and the matching index changes go to the
/// index writer (``IndexLog``) in the same hold; what it leaves to do (bytes to discard, events, kernel
/// notifications, enforcement) comes back as ``NameEffects`` and is carried out after the
/// lock is released (`change`).
///
/// Pool usage, the pools' replacement state and the counters are changed inside the hold
/// (each behind a leaf lock of its own), so a size, a flag and a removal can never count a
/// file in the wrong place.
package final class Names: Sendable {
    let namespace: Namespace
    /// Cached, persistent and pending bytes and files per pool.
    let usage: UsageLedger
    /// Each pool's settings (limits, origin, eviction choice). A pool's creation and removal
    /// change them inside the namespace hold, so a pool and its settings appear and go
    /// together; every change of a pool's settings (setfattr, `auto`'s switch) is made under
    /// `poolChanges`, committed first.
    let poolSettings: Mutex<[EntryID: PoolSettings]>
    /// Entry ids handed out, from a range reserved in the index (see ``IDReservation``).
    let ids: Mutex<IDReservation>
    /// Read times gathered without the namespace lock, logged by `logAccessTimes`, moved into
    /// the inodes by `flushAccessTimes`.
    let access: AccessTracker
    /// Makes a flush of access times complete before another flush returns, so a pass that
    /// flushed sees every earlier read in the index when it picks victims.
    private let accessFlush = Mutex(())
    /// Serializes changes of pools and their settings (creation, removal, setfattr, `auto`'s
    /// switch): each reads a pool's settings and writes them back whole; commits wait
    /// outside the namespace hold.
    let poolChanges = Mutex(())
    /// Directories whose contents are evicted together (`user.cache.unit`).
    let units: UnitRoots
    /// Directories being loaded or unloaded now, one at a time each (``LoadsInFlight``).
    let loadsInFlight = LoadsInFlight()
    /// How many loaded entries may stay when idle directories could leave (``unloadIdleDirectories()``).
    package let memoryBudget: MemoryBudget
    /// Keeps unloads apart from operations that load directories first and change them in
    /// later holds (``keepingLoaded(_:)``).
    let unloadGate = UnloadGate()

    /// Where changes go, in the order memory made them (the index writer).
    let index: any IndexLog
    /// Where directories not loaded yet are read, outside the lock (``Names/withLoaded``).
    let directories: any DirectorySource
    let fetches: any FetchState
    /// Each pool's replacement policy, told of files counted in and out inside the hold.
    let replacement: any ReplacementNotes
    let counters: any NameCounters
    /// Carries out ``NameEffects`` once the lock is released.
    let effects: any NameEffectsSink
    let clock: any WallClock
    let logger: Logger
    let fingerprints: any NameFingerprinting
    /// Set once the kernel serves opens by itself (`kernel_hits`): the daemon no longer sees
    /// which files are open, so every removal keeps a file's bytes while the kernel holds its
    /// inode, until its FORGET (which comes at the last close of a file open somewhere).
    package let kernelServesOpens = Atomic<Bool>(false)

    package init(setup: NamesSetup, index: any IndexLog, directories: any DirectorySource, fetches: any FetchState,
                 replacement: any ReplacementNotes, counters: any NameCounters, effects: any NameEffectsSink) {
        namespace = Namespace(log: index)
        usage = UsageLedger(setup.usage)
        poolSettings = Mutex(setup.poolSettings)
        ids = Mutex(setup.ids)
        access = setup.access
        units = UnitRoots(setup.unitRoots)
        memoryBudget = setup.memoryBudget
        fingerprints = setup.fingerprints
        clock = setup.clock
        logger = setup.logger
        self.index = index
        self.directories = directories
        self.fetches = fetches
        self.replacement = replacement
        self.counters = counters
        self.effects = effects
    }

    package var now: Timestamp { clock.now() }

    func carryOut(_ done: NameEffects) {
        for error in done.errors { logger.error("\(error)") }
        effects.discardBytes(of: done.bytesToDiscard)
        if !done.events.isEmpty { effects.record(done.events) }
        if !done.notifications.isEmpty { effects.enqueue(done.notifications) }
        if !done.poolsToEnforce.isEmpty { effects.requestEnforcement(of: Array(done.poolsToEnforce)) }
    }

    /// The newest copy of an entry (memory, loading its directory if needed). GETATTR's
    /// path: an entry the kernel holds is in memory, so one plain hold answers it.
    package func record(_ id: EntryID) throws -> EntryRecord {
        if let inMemory = namespace.withLock({ $0.inodes[id]?.record }) { return inMemory }
        return try withLoaded([]) { try $0.record(id) }
    }

    /// `id`'s record with its last access as of now, for judging (expiry) and showing, never
    /// for writing back. The time gathered in memory is read *before* the record: a fold lets
    /// go of a time only once the inode holds it, so a time missing then is in the record read
    /// after. (Read after the record, a fold in between could leave neither: the older time.)
    /// No tracker lock is taken inside the namespace hold.
    package func recordAsOfNow(_ id: EntryID) throws -> EntryRecord {
        let pending = access.pendingTime(id)
        return Self.record(try record(id), readSince: pending)
    }

    /// `record` with a read time taken before it, the newer of the two (as a fold keeps).
    static func record(_ record: EntryRecord, readSince pending: Int64?) -> EntryRecord {
        guard let pending, pending > record.lastAccess else { return record }
        var current = record
        current.lastAccess = pending
        return current
    }

    /// Changes an entry in memory (atomically, so a concurrent write's growth is never lost)
    /// and hands the result to the index writer. Call inside the namespace hold.
    @discardableResult
    func update(_ id: EntryID, in namespace: inout NamespaceState, _ change: (inout EntryRecord) throws -> Void) throws
        -> (before: EntryRecord, after: EntryRecord)
    {
        guard try namespace.inode(id) != nil else { throw CacheError.notFound }
        let result = try namespace.modify(id) { inode -> (EntryRecord, EntryRecord) in
            let before = inode.record
            try change(&inode.record)
            return (before, inode.record)
        }!
        moveUsageIfPersistenceChanged(from: result.0, to: result.1, in: &namespace)
        recostIfCostChanged(from: result.0, to: result.1)
        if result.1.parent != nil { namespace.log(.update(result.1)) }
        return (result.0, result.1)
    }

    /// What names a file across evictions for its pool's policy (see ``NameFingerprinting``).
    package func fingerprint(of record: EntryRecord) -> UInt64 {
        fingerprints.of(parent: record.parent, name: record.name)
    }

    /// An id for a new entry; when its range is used up, the next range is committed first.
    package func takeID() throws -> EntryID {
        let taken = ids.withLock { $0.take() }
        if let bound = taken.newBound {
            index.enqueue([.setting(key: IDReservation.settingKey, value: String(bound))])
            index.waitForCommit()
        }
        return taken.id
    }

    /// Whether a file's size is in its pool's usage (see ``FetchState``): any file but one of
    /// an origin pool whose fetch has not started. Usage changes that depend on it are made
    /// inside the namespace hold, as the fetch's start is.
    package func countsInUsage(_ record: EntryRecord) -> Bool {
        !record.writing || fetches.countsInUsage(record.entryID)
    }

    /// The fold: moves the access times gathered by reads since the last one into the inodes
    /// and hands them to the index writer in the same holds (bounded ones, see
    /// `foldAccessTimes`), the access log's rows going after them, then waits for the commit:
    /// a pass that flushed sees every earlier read in the index when it picks victims.
    package func flushAccessTimes() {
        accessFlush.withLock { _ in foldAccessTimes() }
    }

    /// The evictor's periodic step: appends the read times gathered since the last append to
    /// the access log, or folds them all once ``Tunables/accessFoldFiles`` files were read
    /// since the last fold (`foldingPast`). Does not wait for the commit.
    package func logAccessTimes(foldingPast limit: Int = Tunables.accessFoldFiles) {
        accessFlush.withLock { _ in
            if access.unfoldedCount >= limit { return foldAccessTimes() }
            let times = access.takeUnlogged()
            if !times.isEmpty { index.enqueue([.accessLog(times)]) }
        }
    }

    /// Call holding `accessFlush`, so appends and folds reach the writer in the order taken.
    /// Each hold moves a bounded share of the times into the inodes and logs them; the log's
    /// rows go only after the last share, so a crash in between loses none of them. A time
    /// leaves the tracker only once its inode and its index row hold it (after the commit),
    /// so no reader sees a file's older time mid-fold: not an expiry check at a lookup or an
    /// open, nor a figure that reads the index's rows (`oldest_access`).
    private func foldAccessTimes() {
        let times = Array(access.snapshot())
        var start = 0
        while start < times.count {
            let share = times[start..<min(start + Tunables.foldTimesPerHold, times.count)]
            namespace.withLock { namespace in
                for (id, time) in share {
                    namespace.modify(id) { inode in
                        inode.record.lastAccess = max(inode.record.lastAccess, time)
                    }
                }
                namespace.log(.accessTimes(Dictionary(uniqueKeysWithValues: share.map { ($0.key, $0.value) })))
            }
            start = share.endIndex
            if start < times.count { yieldBetweenHolds() }
        }
        if !times.isEmpty { index.enqueue([.accessLogFolded]) }
        index.waitForCommit()
        access.folded(times)
    }

    /// The read time of a file, newest first: gathered since the last flush, or the record's.
    /// Exact for a record read in the current namespace hold; for a copy read before, a fold
    /// may have let go of the time since (use ``recordAsOfNow(_:)``).
    package func lastAccess(of record: EntryRecord) -> Int64 {
        access.pendingTime(record.entryID) ?? record.lastAccess
    }
}

extension Names {
    /// At unmount: nameless entries leave the index, and so do files of origin pools whose
    /// fetch did not finish (looked up again next time); every write mark is cleared.
    /// Returns the ids whose bytes are to be unlinked once the index has let them go.
    package func settleForShutdown() -> [EntryID] {
        var leftovers: [EntryID] = []
        namespace.withLock { namespace in
            for inode in namespace.all {
                if inode.record.parent == nil {
                    namespace.log(.delete(inode.id))
                    if inode.record.kind == .file { leftovers.append(inode.id) }
                } else if fetches.isUnfinished(inode.id) {
                    namespace.log(.delete(inode.id))
                    if countsInUsage(inode.record) {
                        usage.addFile(-1, bytes: -inode.record.size, pool: inode.record.pool, persistent: false)
                    }
                    leftovers.append(inode.id)
                } else if inode.isWriting {
                    var record = inode.record
                    record.writing = false
                    namespace.log(.content(record))
                }
            }
        }
        return leftovers
    }
}

/// Figures other owners read from the leaves `Names` keeps (each its own short lock, never
/// the namespace's).
extension Names {
    package func usage(of pool: EntryID) -> PoolUsage { usage.usage(of: pool) }

    package func pendingBytes(of pool: EntryID) -> Int64 { usage.pendingBytes(of: pool) }

    /// Bytes of removed files that stay until their last close or the kernel's FORGET.
    package func pendingBytesOfAllPools() -> Int64 { usage.pendingBytesOfAllPools() }

    /// A read of `id` now, gathered without the namespace lock.
    package func noteAccess(_ id: EntryID) { access.touch(id, at: now.nanoseconds) }

    /// The read time of `id` gathered since the last flush, if any.
    package func pendingAccessTime(of id: EntryID) -> Int64? { access.pendingTime(id) }

    /// Every read time gathered since the last flush.
    package func pendingAccessTimes() -> [EntryID: Int64] { access.snapshot() }

    package func unitRoots() -> Set<EntryID> { units.all }

    package func isUnitRoot(_ directory: EntryID) -> Bool { units.contains(directory) }

    package func fingerprint(parent: EntryID, name: Data) -> UInt64 { fingerprints.of(parent: parent, name: name) }
}
