import Foundation
import GRDB
import Logging
import Synchronization

/// The facade the FUSE adapter calls: one synchronous, throwing method per filesystem
/// operation, safe to call from any libfuse worker thread.
///
/// Lock order (take them in this order, never the other way round):
///   `evictionPass` < `accessFlush` < `namespaceLock` < `NodeTable` < `HandleTable` < `UsageLedger` < `AccessTracker`
///   < `policies` < `counters` < `schedule`.
/// `namespaceLock` serialises changes to names and metadata together with their index
/// writes, so memory and index never disagree. It is never taken by getattr, read or write
/// (except when they must remove a file), nor by a lookup the kernel's nodes answer; a lookup
/// or listing that must read the index for a node not in memory reads it under this lock (see
/// `lookup`). It is never held across unlinks of stored bytes. The inner mutexes guard
/// memory only and are never held across disk or index I/O, nor across a reply to the
/// kernel (the adapter holds no lock at all). Notifications to the kernel are sent only by
/// the background worker, holding no lock.
public final class CacheEngine: Sendable {
    // MARK: - Dependencies
    let layout: StoreLayout
    let index: IndexStore
    let disk: any Disk
    let clock: any WallClock
    let notifier: any KernelNotifier
    let logger: Logger
    let events: EventLog
    let reserve: SpaceReserve
    private let storeLock: StoreLock

    // MARK: - Constant data
    let accessFlushSeconds: Double
    let sweepSeconds: Double
    let pressureCheckSeconds: Double
    let durabilitySeconds: Double

    // MARK: - Mutable state
    /// One eviction pass at a time (size, age, pressure, clear): two passes deciding from
    /// the same usage figures would both evict. Held across index reads and unlinks; taken
    /// only by eviction, never by a request that does not evict.
    let evictionPass = Mutex(())
    /// Makes a flush of access times complete before another flush returns, so a pass that
    /// flushed sees every earlier read in the index when it picks victims.
    let accessFlush = Mutex(())
    let namespaceLock = Mutex(())
    let nodes = NodeTable()
    let handles = HandleTable()
    let usage: UsageLedger
    let access = AccessTracker()
    /// Guarded by its own mutex; changed under `namespaceLock` too.
    let policies: Mutex<[EntryID: PoolPolicy]>
    let counters: Mutex<PoolCounters>
    /// Pools a write pushed over a limit, and removals the kernel has yet to hear about.
    let schedule = Mutex(BackgroundSchedule())
    let worker: BackgroundWorker

    public init(_ configuration: EngineConfiguration) throws {
        layout = StoreLayout(root: configuration.storePath)
        disk = configuration.disk
        clock = configuration.clock
        notifier = configuration.notifier
        logger = configuration.logger
        accessFlushSeconds = configuration.accessFlushSeconds
        sweepSeconds = configuration.sweepSeconds
        pressureCheckSeconds = configuration.pressureCheckSeconds
        durabilitySeconds = configuration.durabilitySeconds
        try StoreInitializer.prepareDirectories(layout, disk: disk)
        storeLock = try StoreLock(layout: layout)
        let reserve = SpaceReserve(path: layout.reservePath, logger: logger)
        self.reserve = reserve
        do {
            index = try IndexStore(path: layout.indexPath, freeSpaceForIndex: { reserve.release() })
        } catch {
            throw StoreError.corruptIndex(layout.root, "\(error)")
        }
        events = EventLog(path: layout.eventsPath, maxBytes: configuration.eventLogMaxBytes, logger: logger)
        try StoreInitializer.ensureRootAndPools(index: index, clock: clock, overrides: configuration.poolOverrides)
        if let minFree = configuration.minFree {
            try index.setSetting(MinFree.settingKey, minFree.description)
        }
        let boot = BootIdentity.current()
        let powerLost = try BootIdentity.wasPowerLost(index: index, currentBoot: boot)
        let uncleanStop = try index.setting(BootIdentity.cleanKey) == "0"
        try Recovery(index: index, layout: layout, disk: disk, logger: logger)
            .run(afterPowerLoss: powerLost, afterUncleanStop: uncleanStop)
        try index.setSetting(BootIdentity.bootKey, boot)
        try index.setSetting(BootIdentity.cleanKey, "0")
        usage = UsageLedger(try index.usageByPool())
        policies = Mutex(try index.poolPolicies())
        counters = Mutex(PoolCounters.load(from: index))
        worker = BackgroundWorker(tick: min(accessFlushSeconds, sweepSeconds, pressureCheckSeconds,
                                            durabilitySeconds, 1))
        worker.start { [weak self] in self?.runBackgroundRound() }
        // Limits may have been lowered (by --pool) since the last mount.
        requestEnforcement(of: Array(policies.withLock { $0.keys }))
    }

    /// Flushes everything and closes what is still open; the store reopens cleanly after.
    public func shutdown() {
        worker.stop()
        var leftovers: [EntryID] = []
        for file in handles.removeAll() {
            disk.close(file.fd)
            _ = nodes.close(file.entry, writable: file.writable)
        }
        namespaceLock.withLock { _ in
            for node in nodes.all where node.record.writing {
                var record = node.record
                record.writing = false
                try? index.update(record)
            }
            for record in (try? index.unfinishedEntries()) ?? [] where record.parent == nil {
                try? index.delete(record.entryID)
                leftovers.append(record.entryID)
            }
        }
        unlinkBytes(of: leftovers)
        flushAccessTimes()
        do {
            try counters.withLock { $0 }.save(to: index)
            // Everything reaches the disk before the store is called clean: after a reboot
            // that follows a clean unmount, no file is suspected of being torn.
            try disk.syncFilesystem(layout.root)
            try index.markAllClosedFilesDurable()
            try index.setSetting(BootIdentity.cleanKey, "1")
            try index.checkpoint()
        } catch {
            logger.error("saving state at shutdown failed: \(error)")
        }
    }

    func flushAccessTimes() {
        accessFlush.withLock { _ in
            let times = access.drain()
            do {
                try index.flushAccessTimes(times)
            } catch {
                logger.error("could not record \(times.count) access times: \(error)")
            }
        }
    }

    // MARK: - Shared helpers

    var now: Timestamp { clock.now() }

    /// The newest copy of an entry: memory while the kernel holds it, else the index.
    func record(_ id: EntryID) throws -> EntryRecord {
        if let record = nodes.record(id) { return record }
        guard let record = try index.entry(id) else { throw CacheError.notFound }
        return record
    }

    /// Changes an entry in memory (atomically, so a concurrent write's growth is never lost)
    /// or in the index when the kernel does not hold it, then writes the result to the index.
    /// Call under `namespaceLock`; `change` must touch memory only.
    @discardableResult
    func update(_ id: EntryID, _ change: (inout EntryRecord) throws -> Void) throws
        -> (before: EntryRecord, after: EntryRecord)
    {
        var result: (before: EntryRecord, after: EntryRecord)?
        try nodes.modify(id) { node in
            let before = node.record
            try change(&node.record)
            result = (before, node.record)
            moveUsageIfPersistenceChanged(from: before, to: node.record)
        }
        if result == nil {
            // Not in memory, so not open: no write can change its size meanwhile.
            guard let stored = try index.entry(id) else { throw CacheError.notFound }
            var changed = stored
            try change(&changed)
            result = (stored, changed)
            moveUsageIfPersistenceChanged(from: stored, to: changed)
        }
        do {
            try index.update(result!.after)
        } catch is RecordError {
            // The row went (evicted or removed) while this change was being made.
            throw CacheError.notFound
        }
        return result!
    }

    /// A named file that becomes (or stops being) persistent moves between its pool's
    /// figures. Called where the size cannot change underneath (see `write`).
    func moveUsageIfPersistenceChanged(from before: EntryRecord, to after: EntryRecord) {
        guard after.kind == .file, after.parent != nil, before.persistent != after.persistent else { return }
        usage.moveFile(bytes: after.size, pool: after.pool, toPersistent: after.persistent)
    }

    /// Deletes stored bytes whose entries are already gone from the index. Ids are never
    /// reused, so this can run after `namespaceLock` is released.
    func unlinkBytes(of ids: [EntryID]) {
        for id in ids {
            do throws(CacheError) {
                try disk.unlink(layout.objectPath(for: id))
            } catch where error.errno != ENOENT {
                logger.error("could not remove bytes of entry \(id): \(error)")
            } catch {}
            access.forget(id)
        }
    }
}

/// Work handed to the background worker.
struct BackgroundSchedule: Sendable {
    var poolsToEnforce: Set<EntryID> = []
    var notifications: [PendingNotification] = []
    var pressureRequested = false
    var lastFlush: Double = 0
    var lastSweep: Double = 0
    var lastPressureCheck: Double = 0
    var lastDurabilitySync: Double = 0
    /// Bytes written since free space was last looked at; past a threshold a write asks
    /// for a pressure check, so a fast writer cannot fill the disk between periodic checks.
    var bytesSincePressureCheck: Int64 = 0
}
