import CachePolicy
import Foundation
import GRDB
import Logging
import Synchronization

/// The facade the FUSE adapter calls: one synchronous, throwing method per filesystem
/// operation, safe to call from any libfuse worker thread.
///
/// Lock order (take them in this order, never the other way round):
///   `Evictor.pass` < `accessFlush` < `Namespace` < `HandleTable` < `UsageLedger` < `AccessTracker`
///   < `policies` < `counters` < `FetchTable` < `Evictor.schedule` < the notification queue < `IndexWriter`'s queue.
/// A fetch's `FetchProgress` and `FetchLimiter`, `SpareByteFiles` and the `ByteRemover`'s queue
/// are leaves, never held while another lock is taken.
/// The ``Namespace`` owns names and metadata; every change to them is made in memory under
/// its lock and handed, in the same hold, to the ``IndexWriter``, which commits in groups on
/// its own thread. So no request waits for SQLite but `fsync`, `fsyncdir`, the first write
/// into a closed file (its `writing` mark must be on disk before its bytes change) and rare
/// settings. The namespace lock is held for memory work and a directory's first load, never
/// across a commit or I/O on file bytes. The inner mutexes guard memory only, and nothing is
/// held across a reply to the kernel (the adapter holds no lock at all). Notifications to
/// the kernel are sent only by the notification thread, holding no lock.
public final class CacheEngine: Sendable {
    // MARK: - Dependencies
    let layout: StoreLayout
    let index: IndexStore
    let disk: any Disk
    let clock: any WallClock
    let notifier: any KernelNotifier
    let logger: Logger
    let events: EventLog
    /// Pools' access traces (`user.cache.trace`), written by the evictor's thread.
    let traces: TraceFiles
    let reserve: SpaceReserve
    /// What a user must act on, shown by `cachefs status` (the root's `user.cache.warnings`).
    public let warnings = StoreWarnings()
    private let storeLock: StoreLock

    // MARK: - Constant data
    let durabilitySeconds: Double
    let commitWindowSeconds: Double

    // MARK: - Mutable state
    /// Makes a flush of access times complete before another flush returns, so a pass that
    /// flushed sees every earlier read in the index when it picks victims.
    let accessFlush = Mutex(())
    let namespace: Namespace
    let writer: IndexWriter
    let handles = HandleTable()
    let usage: UsageLedger
    let access = AccessTracker()
    /// Guarded by its own mutex; changed inside the `Namespace` hold too (pool creation and
    /// removal, policy changes), so a pool and its policy appear, change and go together.
    let policies: Mutex<[EntryID: PoolPolicy]>
    let counters: Mutex<PoolCounters>
    /// Size, age and pressure passes on a thread of their own, and each pool's replacement policy.
    let evictor: Evictor
    /// What cachefs changed by itself, told to the kernel from a thread of its own.
    let notifications: KernelNotifications
    /// Syncs closed files and marks them durable (see `makeClosedFilesDurable`).
    let durability: BackgroundWorker
    let remover = ByteRemover()
    /// Entry ids handed out, from a range reserved in the index (see ``IDReservation``).
    let ids: Mutex<IDReservation>
    /// Read-through pools: fetches not finished, names origins lack, the per-pool bound.
    let fetches = FetchTable()
    let spares: SpareByteFiles
    let negativeMisses = NegativeCache()
    let fetchLimiter: FetchLimiter
    /// The HTTP client of http(s) and s3 origins (started by their first request), and the
    /// endpoint and keys of s3 origins.
    let originContext: OriginContext
    let originSettings: OriginSettings

    public init(_ configuration: EngineConfiguration) throws {
        layout = StoreLayout(root: configuration.storePath)
        disk = configuration.disk
        clock = configuration.clock
        notifier = configuration.notifier
        logger = configuration.logger
        durabilitySeconds = configuration.durabilitySeconds
        commitWindowSeconds = configuration.commitWindowSeconds
        try StoreInitializer.prepareDirectories(layout, disk: disk)
        storeLock = try StoreLock(layout: layout, disk: disk)
        let reserve = SpaceReserve(path: layout.reservePath, disk: disk, logger: logger)
        self.reserve = reserve
        do {
            index = try IndexStore(path: layout.indexPath, freeSpaceForIndex: { reserve.releaseForFullDisk() })
        } catch {
            throw StoreError.corruptIndex(layout.root, "\(error)")
        }
        events = EventLog(path: layout.eventsPath, maxBytes: configuration.eventLogMaxBytes, disk: disk,
                          logger: logger)
        traces = TraceFiles(layout: layout, disk: disk, logger: logger)
        let boot = BootIdentity.current()
        let powerLost = try BootIdentity.wasPowerLost(index: index, currentBoot: boot)
        let previousStop = try index.setting(BootIdentity.cleanKey)
        // Recovery first: it clears the previous mount's open id range, which a pool created
        // by `--pool` below may then take an id from.
        try Recovery(index: index, layout: layout, disk: disk, logger: logger)
            .run(afterPowerLoss: powerLost, afterUncleanStop: previousStop == "0")
        spares = try SpareByteFiles(layout: layout, disk: disk, discard: powerLost)
        try StoreInitializer.ensureRootAndPools(index: index, clock: clock, overrides: configuration.poolOverrides)
        try StoreInitializer.applyOrigins(configuration.origins, index: index, clock: clock)
        originSettings = configuration.originSettings
        originContext = OriginContext(transport: HTTPTransport(), s3: .load(endpoint: configuration.originSettings.s3Endpoint))
        fetchLimiter = FetchLimiter()
        if let minFree = configuration.minFree {
            try index.setSetting(MinFree.settingKey, minFree.description)
        }
        ids = Mutex(try IDReservation.afterRecovery(index: index))
        try index.setSetting(BootIdentity.bootKey, boot)
        try index.setSetting(BootIdentity.cleanKey, "0")
        usage = UsageLedger(try index.usageTotals())
        let storedPolicies = try index.poolPolicies()
        policies = Mutex(storedPolicies)
        counters = Mutex(try PoolCounters.load(from: index, logger: logger))
        writer = IndexWriter(index: index, walPath: layout.indexPath + "-wal", disk: disk, logger: logger,
                             commitWindow: commitWindowSeconds, warnings: warnings)
        reserve.handOver()
        writer.start()
        namespace = Namespace(index: index, writer: writer)
        try namespace.withLock { try $0.loadChildren(of: WellKnownEntry.root) }
        evictor = Evictor(timing: Evictor.Timing(accessFlushSeconds: configuration.accessFlushSeconds,
                                                 sweepSeconds: configuration.sweepSeconds,
                                                 pressureCheckSeconds: configuration.pressureCheckSeconds),
                          policies: storedPolicies)
        notifications = KernelNotifications(notifier: notifier)
        durability = BackgroundWorker(tick: durabilitySeconds, name: "cachefs-durable", roundAtStart: false)
        evictor.start(serving: self)
        notifications.start()
        durability.start { [weak self] in self?.makeClosedFilesDurable() }
        remover.start { [weak self] ids in self?.removeBytesAndRows(of: ids) }
        // Limits may have been lowered (by --pool) since the last mount.
        evictor.requestEnforcement(of: Array(policies.withLock { $0.keys }))
    }

    /// Flushes everything and closes what is still open; the store reopens cleanly after.
    public func shutdown() {
        fetches.stopAll(interrupting: originContext.transport.shutdown)
        evictor.stop()
        notifications.stop()
        for trace in evictor.replacement.takeTraces() {
            appendTrace(trace.bytes, droppedLines: trace.dropped, of: trace.pool)
        }
        durability.stop()
        var leftovers: [EntryID] = []
        for file in handles.removeAll() {
            disk.close(file.fd)
        }
        namespace.withLock { namespace in
            for inode in namespace.all {
                if inode.record.parent == nil {
                    namespace.log(.delete(inode.id))
                    if inode.record.kind == .file { leftovers.append(inode.id) }
                } else if fetches.isUnfinished(inode.id) {
                    // Shown by its origin but not all fetched: looked up again next time.
                    namespace.log(.delete(inode.id))
                    if countsInUsage(inode.record) {
                        usage.addFile(-1, bytes: -inode.record.size, pool: inode.record.pool, persistent: false)
                    }
                    leftovers.append(inode.id)
                } else if inode.record.writing {
                    var record = inode.record
                    record.writing = false
                    namespace.log(.content(record))
                }
            }
        }
        flushAccessTimes()
        writer.enqueue(.setting(key: PoolCounters.settingKey, value: counters.withLock { $0 }.encoded))
        // The removals committed so far finish (their rows go with the writer's last commits).
        writer.flush()
        remover.stop()
        writer.stop()
        unlinkBytes(of: leftovers)
        do {
            // Everything reaches the disk before the store is called clean: after a reboot
            // that follows a clean unmount, no file is suspected of being torn.
            try disk.syncFilesystem(layout.root)
            try index.markAllClosedFilesDurable()
            try index.setSetting(BootIdentity.cleanKey, "1")
            try index.checkpoint()
            writer.writeBackIfRemovedAtStop()
            reserve.restore()
        } catch {
            logger.error("saving state at shutdown failed: \(error)")
        }
    }

    /// Stops the threads without saving anything, leaving the store as `kill -9` would
    /// (for tests): what the index writer had not committed is lost.
    func simulateCrash() {
        fetches.stopAll(interrupting: originContext.transport.shutdown)
        evictor.stop()
        notifications.stop()
        durability.stop()
        writer.abandon()
        remover.abandon()
    }

    /// Moves the access times gathered by reads into the inodes and hands them to the index
    /// writer in the same hold, then waits for the commit: a pass that flushed sees every
    /// earlier read in the index when it picks victims.
    func flushAccessTimes() {
        accessFlush.withLock { _ in
            let times = access.drain()
            if !times.isEmpty {
                namespace.withLock { namespace in
                    for (id, time) in times {
                        namespace.modify(id) { inode in
                            inode.record.lastAccess = max(inode.record.lastAccess, time)
                        }
                    }
                    namespace.log(.accessTimes(times))
                }
            }
            writer.flush()
        }
    }

    // MARK: - Shared helpers

    var now: Timestamp { clock.now() }

    /// The newest copy of an entry (memory, loading its directory if needed).
    func record(_ id: EntryID) throws -> EntryRecord {
        try namespace.withLock { try $0.record(id) }
    }

    /// Changes an entry in memory (atomically, so a concurrent write's growth is never lost)
    /// and hands the result to the index writer. Call inside `namespace.withLock`.
    @discardableResult
    func update(_ id: EntryID, in namespace: inout NamespaceState, _ change: (inout EntryRecord) throws -> Void) throws
        -> (before: EntryRecord, after: EntryRecord)
    {
        guard try namespace.inode(id) != nil else { throw CacheError.notFound }
        let result = try namespace.modify(id) { inode -> (EntryRecord, EntryRecord) in
            let before = inode.record
            try change(&inode.record)
            moveUsageIfPersistenceChanged(from: before, to: inode.record)
            return (before, inode.record)
        }!
        if result.1.parent != nil { namespace.log(.update(result.1)) }
        return (result.0, result.1)
    }

    /// A named file that becomes (or stops being) persistent moves between its pool's
    /// figures. Called where the size cannot change underneath (see `write`).
    func moveUsageIfPersistenceChanged(from before: EntryRecord, to after: EntryRecord) {
        guard after.kind == .file, after.parent != nil, before.persistent != after.persistent else { return }
        usage.moveFile(bytes: after.size, pool: after.pool, toPersistent: after.persistent)
        if after.persistent {
            evictor.replacement.removed(after.entryID, pool: after.pool)
        } else {
            evictor.replacement.inserted(after.entryID, fingerprint: fingerprint(of: after), size: after.size, pool: after.pool)
        }
    }

    /// What names a file across evictions for its pool's policy (a ghost entry, a
    /// frequency count): its directory and name, so a name that comes back is recognised.
    func fingerprint(of record: EntryRecord) -> UInt64 {
        Fingerprint.of(parent: record.parent ?? 0, name: record.name)
    }

    /// Deletes the bytes of entries whose names are gone, once the index has their rows
    /// nameless: a crash before the unlink leaves a nameless row, which recovery finishes,
    /// never bytes without a row. The rows go after the bytes. Ids are never reused.
    func discardBytes(of ids: [EntryID]) {
        guard !ids.isEmpty else { return }
        writer.enqueue([.afterCommit { [remover] in remover.enqueue(ids) }])
    }

    /// A batch of the `ByteRemover`: the bytes, then the rows.
    private func removeBytesAndRows(of ids: [EntryID]) {
        unlinkBytes(of: ids)
        writer.enqueue(ids.map { .delete($0) })
    }

    /// New, empty bytes for `id`, open for reading and writing: a spare if one waits.
    func makeBytes(for id: EntryID) throws(CacheError) -> Int32 {
        if let fd = spares.take(for: id) { return fd }
        return try disk.open(layout.objectPath(for: id), flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
    }

    func unlinkBytes(of ids: [EntryID]) {
        for id in ids {
            // A fetch in flight may still write through its own descriptor: such bytes are
            // unlinked, never handed to a new file.
            if !fetches.isUnfinished(id) && spares.keep(id) {
                access.forget(id)
                continue
            }
            do throws(CacheError) {
                try disk.unlink(layout.objectPath(for: id))
            } catch where error.errno != ENOENT {
                logger.error("could not remove bytes of entry \(id): \(error)")
            } catch {}
            access.forget(id)
        }
    }
}
