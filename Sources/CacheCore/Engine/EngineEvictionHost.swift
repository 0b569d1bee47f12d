import CacheModel
import CacheNames
import Foundation
import Glibc
import Logging
import Synchronization

/// What the evictor sees of the store (``EvictionHost``): each question and act a forward
/// to the subsystem that owns the answer. Requests that meet a full disk evict through it
/// too (`freeingSpace`), so a file is never removed two ways.
final class EngineEvictionHost: EvictionHost, Sendable {
    private let names: Names
    private let bytes: ObjectFiles
    private let handles: HandleTable
    private let index: IndexDatabase
    private let writer: IndexWriter
    private let events: EventLog
    private let counters: CounterBook
    private let traces: TraceFiles
    private let evictor: Evictor
    private let blockEviction: BlockEviction
    /// The counters as last saved: an idle mount encodes and writes nothing every round.
    private let savedCounters = Mutex<PoolCounters?>(nil)
    /// The kernel's close events, caught up on before access times are flushed (`kernel_hits`).
    let kernelCloses = KernelCloseFeed()
    let logger: Logger

    init(names: Names, bytes: ObjectFiles, handles: HandleTable, writer: IndexWriter, events: EventLog,
         counters: CounterBook, traces: TraceFiles, evictor: Evictor, blockEviction: BlockEviction, logger: Logger) {
        self.names = names
        self.bytes = bytes
        self.handles = handles
        self.index = writer.index
        self.writer = writer
        self.events = events
        self.counters = counters
        self.traces = traces
        self.evictor = evictor
        self.blockEviction = blockEviction
        self.logger = logger
    }

    var now: Timestamp { names.now }

    func poolSettings() -> [EntryID: PoolSettings] { names.allPoolSettings() }

    func poolNames() -> [EntryID: String] { names.poolNames() }

    func usage(of pool: EntryID) -> PoolUsage { names.usage(of: pool) }

    func dropColdBlocks(of pool: EntryID, bytes: Int64) -> Int64 { blockEviction.free(bytes, in: pool) }

    /// The cached bytes and files of `pool` whose write has not ended (marked `writing`,
    /// with a writable handle open), which the size pass leaves out of its sums: a file
    /// that turns out larger than its pool is refused (EFBIG) without having cost any other
    /// file. O(open handles), never a scan of the pool.
    func usageBeingWritten(in pool: EntryID) -> (bytes: Int64, files: Int64, entries: Set<EntryID>) {
        let candidates = handles.entriesOpenForWriting(in: pool)
        guard !candidates.isEmpty else { return (0, 0, []) }
        var bytes: Int64 = 0
        var entries: Set<EntryID> = []
        for record in names.recordsInMemory(candidates)
        where record.writing && record.parent != nil && !record.persistent {
            bytes += record.size
            entries.insert(record.entryID)
        }
        return (bytes, Int64(entries.count), entries)
    }

    var openHandleCount: Int { handles.count }

    func closedFiles(_ candidates: [EntryRecord]) -> [EntryRecord] {
        names.closedFiles(candidates)
    }

    func freeSpace() throws -> (available: Int64, total: Int64) {
        let stats = try bytes.filesystemStats()
        return (Int64(stats.availableBlocks * stats.fragmentSize), Int64(stats.blocks * stats.fragmentSize))
    }

    func minFree() throws -> MinFree {
        guard let text = try index.setting(MinFree.settingKey) else { return MinFree.defaultValue }
        guard let value = MinFree.parse(text) else {
            logger.error("the stored min_free \(text) does not parse; using \(MinFree.defaultValue)")
            return MinFree.defaultValue
        }
        return value
    }

    var victimQueries: any VictimQueries { index }

    func withCachedFiles<Result>(
        _ body: (_ inMemory: (EntryID) -> EntryRecord?, _ isEligibleInMemory: (EntryID) -> Bool?) -> Result
    ) -> Result {
        names.withCachedFiles(body)
    }

    func loadEntries(_ ids: [EntryID]) -> Set<EntryID> { names.loadEntries(ids) }
    func keepingLoaded<T>(_ body: () throws -> T) rethrows -> T { try names.keepingLoaded(body) }

    func fingerprint(of record: EntryRecord) -> UInt64 { names.fingerprint(of: record) }
    func fingerprint(parent: EntryID, name: Data) -> UInt64 { names.fingerprint(parent: parent, name: name) }

    @discardableResult
    func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                     qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>) {
        names.removeFiles(candidates, as: kind, reason: reason, qualifies: qualifies)
    }

    func isEvictable(_ record: EntryRecord, at time: Timestamp) -> Bool { names.isEvictable(record, at: time) }

    func pendingAccessTimes() -> [EntryID: Int64] { names.pendingAccessTimes() }

    func paths(of records: [EntryRecord]) -> [String] { names.paths(of: records) }

    func isExpired(_ record: EntryRecord, at time: Timestamp) -> Bool { names.isExpired(record, at: time) }

    func endPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID> {
        names.endPinLeases(of: ids, at: time)
    }

    func flushAccessTimes() {
        kernelCloses.catchUp()
        names.flushAccessTimes()
    }

    func logAccessTimes() {
        kernelCloses.catchUp()
        names.logAccessTimes()
    }

    func commitQueued() { writer.flush() }

    func waitForIndex() {
        writer.flush()
        bytes.waitUntilRemoved()
        writer.flush()
    }

    func saveCounters() {
        let snapshot = counters.snapshot
        let changed = savedCounters.withLock { saved in
            defer { saved = snapshot }
            return saved != snapshot
        }
        if changed { writer.enqueue(.setting(key: PoolCounters.settingKey, value: snapshot.encoded)) }
    }

    func withPoolChangesHeld<Result>(_ body: () -> Result) -> Result {
        names.withPoolChanges(body)
    }

    func saveSettings(_ settings: PoolSettings, of pool: EntryID) {
        names.queueSettings(settings, of: pool)
    }

    func record(_ events: [CacheEvent]) { self.events.record(events) }

    func retryPendingEvents() { events.retryPending() }

    func appendTrace(_ lines: [UInt8], droppedLines: Int, of pool: EntryID) {
        guard let name = poolNames()[pool] else { return }
        traces.append(lines, droppedLines: droppedLines, of: pool, named: name)
    }

    /// On ENOSPC, evicts cached files of any pool and tries again, up to
    /// `Tunables.enospcRetries` times while evicting frees something: the caller sees ENOSPC
    /// when nothing is evictable (all pinned, persistent or open) or after those tries.
    func freeingSpace<T>(extra: Int64, _ operation: () throws(CacheError) -> T) throws(CacheError) -> T {
        var attempts = 0
        while true {
            let result = Result { () throws(CacheError) in try operation() }
            guard case .failure(let error) = result, error == .io(ENOSPC) else { return try result.get() }
            attempts += 1
            let outcome = evictor.relievePressure(extra: extra, in: self)
            if outcome == .nothingEvictable, attempts <= Tunables.enospcRetries, waitForRemovedFilesToLetGo() { continue }
            guard attempts <= Tunables.enospcRetries, outcome == .enoughSpace || outcome == .stillShort else {
                throw error
            }
        }
    }

    /// A file a user removed keeps its bytes until its last close or the kernel's FORGET, which
    /// the kernel sends a moment after `rm` returns. On ext4 the space is free once `rm`
    /// returns, so a write that met ENOSPC with nothing left to evict waits (at most
    /// `Tunables.removedBytesWaitSeconds`) for such bytes to go; true when some did.
    private func waitForRemovedFilesToLetGo() -> Bool {
        let held = names.pendingBytesOfAllPools()
        guard held > 0 else { return false }
        let deadline = Date().addingTimeInterval(Tunables.removedBytesWaitSeconds)
        while Date() < deadline {
            usleep(Tunables.removedBytesPollMicroseconds)
            if names.pendingBytesOfAllPools() < held {
                waitForIndex()
                return true
            }
        }
        return false
    }

    /// `purge` and `clear` of pools, before the setfattr that asked returns.
    func purge(pools: [EntryID]) { evictor.purge(pools: pools, in: self) }

    func clear(pools: [EntryID]) { evictor.clear(pools: pools, in: self) }
}

/// Units as the evictor sees them.
extension EngineEvictionHost {
    /// The units of a pool as committed, outermost only (a unit inside another is part of
    /// it), or nil when the pool has none. `pending` are reads not flushed yet (a preview's).
    func units(of pool: EntryID, pending: [EntryID: Int64], writing: Set<EntryID>) throws -> [EvictionUnit]? {
        let roots = names.unitRoots()
        guard !roots.isEmpty else { return nil }
        let inPool = try index.pools(ofDirectories: roots).filter { $0.value == pool }.map(\.key)
        guard !inPool.isEmpty else { return nil }
        let contents = try inPool.compactMap { try index.unitContents(root: $0) }
        let outermost = contents.filter { unit in
            !contents.contains { $0.root.entryID != unit.root.entryID && $0.directories.contains(unit.root.entryID) }
        }
        let time = now
        return withCachedFiles { _, isEligibleInMemory in
            outermost.filter { !$0.files.isEmpty }.map { unit in
                // As the removal's own check would see it: memory's pins and writes are newer.
                let mayGo = unit.files.allSatisfy {
                    !writing.contains($0.entryID) && names.isEvictable($0, at: time) && isEligibleInMemory($0.entryID) != false
                }
                return EvictionUnit(root: unit.root, files: unit.files, pending: pending, mayGo: mayGo)
            }
        }
    }

    func removeUnit(_ unit: EvictionUnit, as kind: CacheEventKind, reason: String,
                    qualifies: (EntryRecord, Timestamp) -> Bool) -> (files: Int, bytes: Int64, ids: Set<EntryID>) {
        names.keepingLoaded {
            // Its check walks the whole unit inside the hold: every directory of it loads first, outside.
            names.loadSubtreeOutsideTheLock(unit.root.entryID)
            return names.removeFiles(unit.files, as: kind, reason: reason, qualifies: qualifies, unit: unit.root)
        }
    }
}
