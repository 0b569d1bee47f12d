import CacheModel
import CacheNames
import CachePolicy
import Foundation
import Logging

/// The facade the FUSE adapter calls: one synchronous, throwing method per filesystem
/// operation, safe to call from any libfuse worker thread, each a forward to the subsystem
/// that owns the state it changes. This file is also the wiring: it opens the store, builds
/// the subsystems in dependency order and stops them at unmount.
///
/// - ``Names``: the namespace, pool usage and policies, ids, access times.
/// - ``Files``: open handles, the writing mark, the durability sync.
/// - ``ObjectFiles``: file bytes in `objects/`, their removal, the store's filesystem.
/// - ``ReadThrough``: origins and fetches.
/// - ``Attributes``: extended attributes, settings and figures.
/// - ``Evictor`` (through ``EngineEvictionHost``): size, age and pressure passes, policies.
///
/// The lock order, and what may wait for I/O under which lock, are written once, in
/// docs/ARCHITECTURE.md ("Invariants" and "Threads and locks").
public final class CacheEngine: Sendable {
    let layout: StoreLayout
    let index: IndexDatabase
    let writer: IndexWriter
    let events: EventLog
    let reserve: SpaceReserve
    /// What a user must act on, shown by `cachefs status` (the root's `user.cache.warnings`).
    public let warnings = StoreWarnings()
    private let storeLock: StoreLock
    let evictor: Evictor
    /// What cachefs changed by itself, told to the kernel from a thread of its own.
    let notifications: KernelNotifications
    let names: Names
    let bytes: ObjectFiles
    let eviction: EngineEvictionHost
    let readThrough: ReadThrough
    let files: Files
    let attributes: Attributes
    /// Idle directories leaving memory past the memory budget, on a thread of its own.
    let unloader: BackgroundWorker
    /// Threads for fetches and byte removals.
    let threads = BlockingPool()
    private let logger: Logger
    /// Whether file bytes are stored encrypted: reads must then be decrypted in the daemon,
    /// never spliced from a stored file's descriptor.
    public let isEncrypted: Bool

    public init(_ configuration: EngineConfiguration) throws {
        let layout = StoreLayout(root: configuration.storePath)
        var configuration = configuration
        // Wrapped before the store opens: recovery, too, sees object files' plaintext sizes.
        let encrypting = configuration.encryption.map {
            EncryptingDisk(wrapping: configuration.disk, encryption: $0, layout: layout)
        }
        if let encrypting { configuration.disk = encrypting }
        isEncrypted = encrypting != nil
        let disk = configuration.disk, logger = configuration.logger
        self.logger = logger
        self.layout = layout
        let opened = try StoreOpening(configuration, layout: layout, warnings: warnings, tamperAlarm: encrypting?.alarm)
        (storeLock, reserve, index, writer, events) = (opened.lock, opened.reserve, opened.index, opened.writer, opened.events)
        evictor = Evictor(timing: Evictor.Timing(accessFlushSeconds: configuration.accessFlushSeconds,
                                                 sweepSeconds: configuration.sweepSeconds,
                                                 pressureCheckSeconds: configuration.pressureCheckSeconds),
                          settings: opened.poolSettings)
        notifications = KernelNotifications(notifier: configuration.notifier)
        let fetches = FetchTable(), access = AccessTracker(), handles = HandleTable()
        bytes = ObjectFiles(layout: layout, disk: disk, spares: opened.spares, writer: writer, fetches: fetches,
                          access: access, threads: threads,
                          keptDescriptors: KeptDescriptors.capacityWithinOpenFileLimit(),
                          logger: logger)
        let counters = CounterBook(opened.counters)
        let setup = NamesSetup(usage: opened.usage, poolSettings: opened.poolSettings, ids: opened.ids,
                               unitRoots: opened.unitRoots, access: access,
                               fingerprints: NameFingerprints(encryption: configuration.encryption),
                               clock: configuration.clock, logger: logger, memoryBudget: configuration.memoryBudget)
        names = Names(setup: setup, index: writer, directories: configuration.directorySource(index), fetches: fetches,
                      replacement: evictor.replacement, counters: counters,
                      effects: EngineNameEffects(bytes: bytes, events: events, notifications: notifications,
                                                 evictor: evictor))
        try names.load(WellKnownEntry.root)
        let blockEviction = BlockEviction(fetches: fetches, names: names, bytes: bytes, logger: logger)
        eviction = EngineEvictionHost(names: names, bytes: bytes, handles: handles, writer: writer, events: events,
                                     counters: counters, traces: TraceFiles(layout: layout, disk: disk, logger: logger),
                                     evictor: evictor, blockEviction: blockEviction, logger: logger)
        let sharedTier = SharedTier(configuration: configuration.sharedTier,
                                    sealing: configuration.encryption.map { SharedTierSealing(keys: $0.sharedTier) },
                                    origins: opened.originContext, names: names, bytes: bytes, events: events,
                                    logger: logger)
        readThrough = ReadThrough(fetches: fetches, threads: threads, originContext: opened.originContext,
                                  originSettings: configuration.originSettings, sharedTier: sharedTier,
                                  originVersions: index,
                                  names: names, bytes: bytes,
                                  eviction: eviction, blockEviction: blockEviction, counters: counters, events: events,
                                  logger: logger)
        files = Files(handles: handles, durabilitySeconds: configuration.durabilitySeconds, names: names, bytes: bytes,
                      readThrough: readThrough, eviction: eviction, writer: writer, evictor: evictor,
                      notifications: notifications, logger: logger)
        attributes = Attributes(names: names, files: files, readThrough: readThrough, eviction: eviction, writer: writer,
                                evictor: evictor, counters: counters, events: events, layout: layout,
                                warnings: warnings, logger: logger)
        unloader = BackgroundWorker(tick: configuration.memoryBudget.checkSeconds, name: "cachefs-unload",
                                    roundAtStart: false)
        encrypting?.alarm.record(in: events, clock: configuration.clock)
        evictor.start(serving: eviction)
        notifications.start()
        files.start()
        bytes.start()
        sharedTier.start()
        unloader.start { [names] in
            names.unloadIdleDirectories()
            names.returnMemoryFreedByListings()
        }
        // Limits may have been lowered (by --pool) since the last mount.
        evictor.requestEnforcement(of: names.poolIDs())
        attributes.checkFloors()
    }

    /// Flushes everything and closes what is still open; the store reopens cleanly after.
    public func shutdown() {
        unloader.stop()
        readThrough.stop()
        evictor.stop()
        notifications.stop()
        for trace in evictor.replacement.takeTraces() {
            eviction.appendTrace(trace.bytes, droppedLines: trace.dropped, of: trace.pool)
        }
        files.durability.stop()
        files.closeAll()
        let leftovers = names.settleForShutdown()
        names.flushAccessTimes()
        eviction.saveCounters()
        // The removals committed so far finish (their rows go with the writer's last commits).
        writer.flush()
        bytes.remover.stop()
        writer.stop()
        bytes.unlink(leftovers)
        var step = "sync"
        do {
            // Everything reaches the disk before the store is called clean: after a reboot
            // that follows a clean unmount, no file is suspected of being torn.
            try bytes.disk.syncFilesystem(layout.root)
            // The log first gives its blocks back: on a disk that writes filled, its headroom
            // may be spent, and the writes below need room (no data write takes it any more).
            // (The writer gave back the blocks kept past the log's end when it stopped: this
            // checkpoint may grow the database file.)
            step = "checkpoint"
            try index.checkpoint()
            step = "durable marks"
            try index.markAllClosedFilesDurable()
            step = "clean mark"
            try index.setSetting(BootIdentity.cleanKey, "1")
            step = "last checkpoint"
            try index.checkpoint()
            writer.writeBackIfRemovedAtStop()
            reserve.restore()
        } catch {
            logger.error("saving state at shutdown failed (\(step)): \(error)")
        }
        threads.shutdown()
    }

    /// Stops the threads without saving anything, leaving the store as `kill -9` would
    /// (for tests): what the index writer had not committed is lost.
    func simulateCrash() {
        unloader.stop()
        readThrough.stop()
        evictor.stop()
        notifications.stop()
        files.durability.stop()
        writer.abandon()
        bytes.remover.abandon()
        threads.shutdown()
    }

    // MARK: - Names

    public func lookup(parent: EntryID, name: [UInt8]) throws -> FileAttributes {
        files.watchForHits(inside: parent)
        return forKernel(try readThrough.lookup(parent: parent, name: name))
    }

    public func forget(_ id: EntryID, count: UInt64) {
        names.forget(id, count: count)
        if files.servesOpensInKernel { files.kernelForgot(id) }
    }

    public func getattr(_ id: EntryID) throws -> FileAttributes {
        var record = try names.record(id)
        // A read the kernel served may have moved atime: its close is counted first.
        if Self.kernelReadWouldMoveAtime(record) && files.servesOpensInKernel {
            eviction.kernelCloses.catchUp()
            record = try names.record(id)
        }
        return withKernelTimeouts(record.attributes, of: record)
    }

    public func readdir(_ id: EntryID, offset: Int64, limit: Int) throws -> [DirectoryItem] {
        try readThrough.readdir(id, offset: offset, limit: limit)
    }

    public func readdirPlus(_ id: EntryID, offset: Int64, limit: Int,
                            fits: (DirectoryItem) -> Bool) throws -> [DirectoryItem] {
        files.watchForHits(inside: id)
        return try readThrough.readdirPlus(id, offset: offset, limit: limit, fits: fits).map { item in
            var item = item
            item.attributes = item.attributes.map(forKernel)
            return item
        }
    }

    public func mkdir(parent: EntryID, name: [UInt8], mode: UInt32, caller: Caller) throws -> FileAttributes {
        beforeNameChange(in: parent)
        return try names.mkdir(parent: parent, name: name, mode: mode, caller: caller)
    }

    public func unlink(parent: EntryID, name: [UInt8]) throws {
        beforeNameChange(in: parent)
        try names.unlink(parent: parent, name: name)
    }

    public func rmdir(parent: EntryID, name: [UInt8]) throws {
        beforeNameChange(in: parent)
        try names.rmdir(parent: parent, name: name)
    }

    public func rename(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8],
                       flags: RenameFlags) throws {
        beforeNameChange(in: newParent)
        try names.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags)
    }

    public func link(_ id: EntryID, newParent: EntryID, newName: [UInt8]) throws -> FileAttributes {
        beforeNameChange(in: newParent)
        return forKernel(try names.link(id, newParent: newParent, newName: newName))
    }

    public func symlink(parent: EntryID, name: [UInt8], target: [UInt8], caller: Caller) throws -> FileAttributes {
        beforeNameChange(in: parent)
        return try names.symlink(parent: parent, name: name, target: target, caller: caller)
    }

    public func readlink(_ id: EntryID) throws -> [UInt8] { try names.readlink(id) }

    /// The store's own filesystem (`statfs` of the root).
    public func statfs() throws -> FilesystemStats { try bytes.filesystemStats() }

    /// A file's `attributes` with how long the kernel may keep them and its name
    /// (``FileAttributes/expiresIn``); the reply of every request that hands the kernel a file's
    /// name or attributes goes through here.
    private func forKernel(_ attributes: FileAttributes) -> FileAttributes {
        guard attributes.kind == .file else { return attributes }
        do {
            return withKernelTimeouts(attributes, of: try names.record(attributes.id))
        } catch {
            // Removed since the request read it: the removal's notification tells the kernel.
            return attributes
        }
    }

    /// Before a request changes names in `directory` (the kernel serving opens): the
    /// directory is watched, and the close events queued so far are read while the names they
    /// carry still mean the files they were made for (a writer closed, then its file renamed
    /// or removed, is ended; a new file of the same name never takes an old file's close).
    private func beforeNameChange(in directory: EntryID) {
        guard files.servesOpensInKernel else { return }
        files.watchForHits(inside: directory)
        eviction.kernelCloses.catchUp()
    }

    /// `attributes` with how long the kernel may keep them and the name: until the file
    /// expires, and, when the kernel serves opens, until its copy must be revalidated (no OPEN
    /// asks then: the kernel's next lookup does), and the attributes alone not at all while a
    /// read would move atime (``FileAttributes/attributesExpireIn``).
    private func withKernelTimeouts(_ attributes: FileAttributes, of record: EntryRecord) -> FileAttributes {
        var result = attributes
        result.expiresIn = names.secondsUntilExpiry(of: record, at: names.now)
        guard files.servesOpensInKernel else { return result }
        if let revalidation = readThrough.secondsUntilRevalidation(of: record) {
            result.expiresIn = min(result.expiresIn ?? .infinity, revalidation)
        }
        if Self.kernelReadWouldMoveAtime(record) { result.attributesExpireIn = 0 }
        return result
    }

    /// Whether a read would move `record`'s atime because the file changed since it was last
    /// read (relatime's day-old rule left aside: a `stat` of every file unread for a day
    /// would then ask the daemon, and there atime moves microseconds after the close).
    private static func kernelReadWouldMoveAtime(_ record: EntryRecord) -> Bool {
        record.kind == .file && (record.atime <= record.mtime || record.atime <= record.ctime)
    }

    // MARK: - Files

    public func create(parent: EntryID, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws
        -> CreatedFile
    {
        beforeNameChange(in: parent)
        var created = try files.create(parent: parent, name: name, mode: mode, flags: flags, caller: caller)
        created.attributes = forKernel(created.attributes)
        created.bypassesPageCache = files.bypassesPageCache(created.handle)
        // No RELEASE will come for this open: its writes go through the inode's writer.
        if files.servesOpensInKernel {
            files.adoptCreated(created)
            created.handle = 0
        }
        return created
    }

    public func mknod(parent: EntryID, name: [UInt8], mode: UInt32, device: UInt64, caller: Caller) throws
        -> FileAttributes
    {
        beforeNameChange(in: parent)
        return forKernel(try files.mknod(parent: parent, name: name, mode: mode, device: device, caller: caller))
    }

    public func open(_ id: EntryID, flags: Int32) throws -> UInt64 { try files.open(id, flags: flags) }

    public func bypassesPageCache(_ handle: UInt64) -> Bool { files.bypassesPageCache(handle) }

    /// The descriptor to answer a READ from (a plaintext store's): the bytes it covers are
    /// there, and stay there until the answer is `done`.
    public func readDescriptor(_ handle: UInt64, offset: Int64, size: Int, isAccess: Bool = true) throws -> PinnedRead {
        try files.readDescriptor(handle, offset: offset, size: size, isAccess: isAccess)
    }

    /// The bytes themselves, decrypted on an encrypted store; `isAccess` as for
    /// ``readDescriptor(_:offset:size:isAccess:)``.
    public func read(_ handle: UInt64, offset: Int64, size: Int, isAccess: Bool = true) throws -> [UInt8] {
        try files.read(handle, offset: offset, size: size, isAccess: isAccess)
    }

    public func write(_ handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer,
                      clearingSetID: Bool = false) throws -> Int {
        try files.write(handle, offset: offset, bytes: bytes, clearingSetID: clearingSetID)
    }

    public func fallocate(_ handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws {
        try files.fallocate(handle, mode: mode, offset: offset, length: length)
    }

    public func setattr(_ id: EntryID, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        forKernel(try files.setattr(id, changes: changes, handle: handle))
    }

    public func flush(_ handle: UInt64, finishesWrite: Bool = true) throws {
        try files.flush(handle, finishesWrite: finishesWrite)
    }

    public func fsync(_ handle: UInt64, dataOnly: Bool) throws { try files.fsync(handle, dataOnly: dataOnly) }

    /// The corresponding FUSE operation is `FSYNCDIR`: the names in the directory (and
    /// everything committed before them) are on the disk.
    public func fsyncDirectory(_ id: EntryID) throws {
        _ = try names.record(id)
        writer.flush(durable: true)
    }

    public func release(_ handle: UInt64) { files.release(handle) }

    /// Waits until every change made so far is committed to the index, and the bytes of
    /// files removed before are gone (the `ByteRemover` removes them after the commit).
    public func waitForIndex() { eviction.waitForIndex() }

    // MARK: - Attributes

    public func getxattr(_ id: EntryID, name: String) throws -> [UInt8] { try attributes.getxattr(id, name: name) }

    public func listxattr(_ id: EntryID) throws -> [String] { try attributes.listxattr(id) }

    public func setxattr(_ id: EntryID, name: String, value: [UInt8], flags: Int32) throws {
        try attributes.setxattr(id, name: name, value: value, flags: flags)
    }

    public func removexattr(_ id: EntryID, name: String) throws { try attributes.removexattr(id, name: name) }

    public func statfs(of id: EntryID) throws -> FilesystemStats { try attributes.statfs(of: id) }

    public func poolFigures() -> [PoolFigures] { attributes.poolFigures() }

    // MARK: - Hits the kernel serves (`kernel_hits`)
    // OPEN and FLUSH are answered ENOSYS, so READ, WRITE, FSYNC and FALLOCATE name only the
    // inode (see docs/no-open-hits.md).

    /// Whether opens are the kernel's (set at INIT, before any request).
    public var servesOpensInKernel: Bool { files.servesOpensInKernel }

    public func serveOpensInKernel() { files.serveOpensInKernel() }

    /// ``readDescriptor(_:offset:size:isAccess:)`` for a READ with no handle.
    public func readDescriptor(ofFile id: EntryID, offset: Int64, size: Int) throws -> PinnedRead {
        try files.readDescriptor(ofFile: id, offset: offset, size: size)
    }

    /// ``read(_:offset:size:isAccess:)`` for a READ with no handle.
    public func read(ofFile id: EntryID, offset: Int64, size: Int) throws -> [UInt8] {
        try files.read(ofFile: id, offset: offset, size: size)
    }

    public func write(ofFile id: EntryID, offset: Int64, bytes: UnsafeRawBufferPointer,
                      clearingSetID: Bool = false) throws -> Int {
        try files.withKernelWriter(of: id) { handle in
            try files.write(handle, offset: offset, bytes: bytes, clearingSetID: clearingSetID)
        }
    }

    public func fallocate(ofFile id: EntryID, mode: Int32, offset: Int64, length: Int64) throws {
        try files.withKernelWriter(of: id) { handle in
            try files.fallocate(handle, mode: mode, offset: offset, length: length)
        }
    }

    public func fsync(ofFile id: EntryID, dataOnly: Bool) throws { try files.fsync(ofFile: id, dataOnly: dataOnly) }

    /// From now on the engine learns of the kernel's hits from `events`: the caller's thread
    /// runs ``KernelCloseEvents/run(_:)`` with ``kernelClosed(_:)``, and eviction passes catch
    /// up on them before they order victims.
    public func listen(to events: KernelCloseEvents) {
        eviction.kernelCloses.attach(events, to: files)
    }

    /// Closes the kernel reported (see ``KernelCloseEvents``).
    public func kernelClosed(_ batch: KernelCloseEvents.Batch) {
        files.kernelClosed(batch)
    }
}
