import CacheModel
import CacheNames
import Foundation
import Logging

/// The owner of read-through: pools' origins, fetches not finished (``FetchTable``), names
/// origins lack (``NegativeCache``) and the per-pool bound on fetches. A name the pool lacks
/// is asked of the pool's origin; a file the origin has appears at once with the origin's
/// size, and its first open starts the one fetch, which stores the bytes as they arrive
/// while readers wait for their range.
final class ReadThrough: Sendable {
    let fetches: FetchTable
    let negativeMisses = NegativeCache()
    let validations = Validations()
    let missCounts = MissCounts()
    /// Where the version a file fetched before this mount holds is kept.
    let originVersions: IndexDatabase
    let fetchLimiter: FetchLimiter
    /// The HTTP client of http(s) and s3 origins (started by their first request), and the
    /// endpoint and keys of s3 origins.
    let originContext: OriginContext
    let originSettings: OriginSettings
    /// Pools' shared tiers: the origin of a pool that has one and no origin of its own.
    let sharedTier: SharedTier

    let names: Names
    let bytes: ObjectFiles
    let eviction: EngineEvictionHost
    let blockEviction: BlockEviction
    let counters: CounterBook
    let events: EventLog
    let logger: Logger

    init(fetches: FetchTable, threads: BlockingPool, originContext: OriginContext, originSettings: OriginSettings,
         sharedTier: SharedTier, originVersions: IndexDatabase, names: Names, bytes: ObjectFiles, eviction: EngineEvictionHost, blockEviction: BlockEviction, counters: CounterBook, events: EventLog,
         logger: Logger) {
        self.fetches = fetches
        fetchLimiter = FetchLimiter(threads: threads) { [names] pool in
            Int(names.settings(ofPool: pool)?.maxFetches ?? PoolSettings.defaultMaxFetches)
        }
        self.originContext = originContext
        self.originSettings = originSettings
        self.sharedTier = sharedTier
        self.originVersions = originVersions
        self.names = names
        self.bytes = bytes
        self.eviction = eviction
        self.blockEviction = blockEviction
        self.counters = counters
        self.events = events
        self.logger = logger
    }

    /// The corresponding FUSE operation is `LOOKUP`: the pool's own name, or its origin's.
    func lookup(parent: EntryID, name: [UInt8]) throws -> FileAttributes {
        switch try names.lookup(parent: parent, name: name) {
        case .found(let attributes):
            // When the kernel serves opens (`kernel_hits`), no OPEN asks whether a fetched
            // file is current: its lookup does, when its `revalidate` is due (the kernel's
            // caches of the name last no longer). Changed at the origin, the copy is dropped
            // and the origin's new version is looked up as a new file.
            guard names.kernelServesOpens.load(ordering: .relaxed), attributes.kind == .file,
                  let record = try? names.record(attributes.id), try !isCurrent(record) else { return attributes }
            names.removeFiles([record], as: .changedAtOrigin, reason: "changed at the origin; found at lookup")
            return try lookup(parent: parent, name: name)
        case .missing(let pool):
            guard let fromOrigin = try lookupInOrigin(parent: parent, name: name, pool: pool) else {
                throw CacheError.notFound
            }
            return fromOrigin
        }
    }

    /// The corresponding FUSE operation is `READDIR`: the pool's own names come first, then
    /// those only its origin has.
    func readdir(_ id: EntryID, offset: Int64, limit: Int) throws -> [DirectoryItem] {
        try names.readdir(id, offset: offset, limit: limit, fromOrigin: originNames(in: id))
    }

    /// The corresponding FUSE operation is `READDIRPLUS` (see ``Names/readdirPlus``).
    func readdirPlus(_ id: EntryID, offset: Int64, limit: Int,
                     fits: (DirectoryItem) -> Bool) throws -> [DirectoryItem] {
        try names.readdirPlus(id, offset: offset, limit: limit, fromOrigin: originNames(in: id), fits: fits)
    }

    func stop() {
        sharedTier.stop()
        fetches.stopAll(interrupting: originContext.transport.shutdown)
    }

    /// `user.cache.fetching` of a file: `received/total` while its fetch runs, `held/total`
    /// (bytes) while it is held in blocks, else empty.
    func fetchingValue(of id: EntryID) -> String {
        if let file = fetches.blockedFile(id) { return "\(file.heldBytes)/\(file.source.size)" }
        guard let snapshot = fetches.progress(of: id).map({ ($0.snapshot.received, $0.total) }) else { return "" }
        return "\(snapshot.0)/\(snapshot.1)"
    }

    /// A pool's origin or its negative TTL changed: names it lacked may now be there.
    func originChanged() {
        negativeMisses.removeAll()
    }

    /// A path for the daemon's log: sealed on an encrypted store.
    func display(_ path: [[UInt8]]) -> String {
        events.shown(path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/"))
    }
}
