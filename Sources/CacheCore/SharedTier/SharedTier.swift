import CacheModel
import CacheNames
import Foundation
import Logging
import NIOCore

/// The owner of the shared tier (docs/shared-tier.md): pools whose `user.cache.shared` names
/// a Redis server or an S3 bucket read what they miss from it (``SharedTierOrigin``, through read-through)
/// and write the files their users finish to it, in the background (``SharedTierQueue``, one
/// thread). Every call has a deadline; the tier down, slow, refusing or corrupt is a miss,
/// counted (``SharedTierCounters``) and logged (``SharedTierFailureLog``), never an error of
/// the request. A pool with an origin has the tier in front of it (``SharedTierBeforeOrigin``).
final class SharedTier: Sendable {
    let names: Names
    let bytes: ObjectFiles
    let configuration: SharedTierConfiguration
    /// An encrypted store's: its files go to the tier sealed, under sealed keys; nil shares plaintext.
    let sealing: SharedTierSealing?
    let counters = SharedTierCounters()
    let queue: SharedTierQueue
    private let backends: SharedTierBackends
    private let failures: SharedTierFailureLog
    /// The one writer thread: its round drains the queue until it stops.
    private let writer = BackgroundWorker(tick: 3600, name: "cachefs-shared")
    let logger: Logger

    /// `origins`: the HTTP client, endpoint and keys an s3:// tier shares with s3:// origins.
    init(configuration: SharedTierConfiguration, sealing: SharedTierSealing?, origins: OriginContext, names: Names,
         bytes: ObjectFiles, events: EventLog? = nil, logger: Logger) {
        self.configuration = configuration
        self.sealing = sealing
        self.names = names
        self.bytes = bytes
        self.logger = logger
        queue = SharedTierQueue(limit: configuration.queueLimit)
        backends = SharedTierBackends(password: configuration.password, trustedCAFile: configuration.trustedCAFile,
                                      origins: origins)
        failures = SharedTierFailureLog(logger: logger, intervalSeconds: Tunables.sharedLogIntervalSeconds,
                                        events: events.map { SharedTierFailureEvents(events: $0, names: names) })
    }

    func start() {
        writer.start { [self] in
            // A passphrase store's tier keys cost scrypt (about 0.4 s) once: paid here, off any
            // request, when a pool already shares, rather than by the first miss's LOOKUP,
            // which would pass its deadline.
            if sealing != nil, names.allPoolSettings().values.contains(where: { !$0.shared.isEmpty }) {
                if let problem = keysProblem() { logger.error("the shared tier's keys: \(problem)") }
            }
            while let item = queue.next() {
                writeBehind(item)
                queue.finished(item)
            }
        }
    }

    /// Stops the writer after the file it writes (at most its deadline); what waits is dropped.
    func stop() {
        queue.stop()
        writer.stop()
        backends.closeAll()
    }

    /// Why `text` cannot be this store's `user.cache.shared`, or nil.
    func refusal(ofSetting text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        if case .failure(let reason) = SharedTierURL.parse(trimmed) { return reason.description }
        // Derived now (the setxattr's wait, once), not at the pool's first miss.
        return keysProblem()
    }

    /// Derives an encrypted store's tier keys if they are not yet; why they cannot be, or nil.
    private func keysProblem() -> String? {
        guard let sealing else { return nil }
        do {
            _ = try sealing.keys.keys()
            return nil
        } catch {
            return "an encrypted store's tier keys cannot be derived: \(error)"
        }
    }

    /// The tier a pool reads from and writes to: set and valid.
    func location(of settings: PoolSettings) -> SharedTierLocation? {
        guard !settings.shared.isEmpty else { return nil }
        // Checked when it was set (``refusal(ofSetting:)``): a stored value always parses.
        return try? SharedTierURL.parse(settings.shared).get()
    }

    /// The read side of `pool` without an origin, if it has a tier.
    func origin(ofPool pool: EntryID, settings: PoolSettings) -> SharedTierOrigin? {
        guard settings.origin.isEmpty else { return nil }
        return location(of: settings).map { SharedTierOrigin(tier: self, pool: pool, location: $0) }
    }

    /// `origin` of `pool`, with the pool's tier in front of it if it has one whose origin
    /// can share (``SharedVersions``).
    func inFront(of origin: any Origin, pool: EntryID, settings: PoolSettings) -> any Origin {
        guard origin.sharedVersions != .notShared, let location = location(of: settings) else { return origin }
        return SharedTierBeforeOrigin(origin: origin, tier: self, pool: pool, location: location,
                                      originSetting: settings.origin)
    }

    // MARK: Reading

    /// The file at `path` of `pool` from the tier at `location`, or nil: not there, or the tier
    /// failed within the lookup's deadline (counted, logged), or its value is corrupt.
    func read(pool: EntryID, path: [[UInt8]], suffix: [UInt8] = [], location: SharedTierLocation) -> [UInt8]? {
        let value: [UInt8]?, key: [UInt8]
        do {
            key = try self.key(pool: pool, path: path, suffix: suffix)
            value = try backends.backend(for: location)
                .value(at: key, deadline: NIODeadline.now() + .milliseconds(configuration.lookupMilliseconds))
        } catch {
            counters.count(pool) { $0.errors += 1 }
            failures.failed(pool: pool, "reading from \(location) failed: \(error)")
            return nil
        }
        guard let value else {
            counters.count(pool) { $0.misses += 1 }
            return nil
        }
        switch decode(value, at: key) {
        case .success(let content):
            counters.count(pool) { counts in
                counts.hits += 1
                counts.bytesRead += Int64(content.count)
            }
            return content
        case .failure(let reason):
            counters.count(pool) { $0.errors += 1 }
            failures.failed(pool: pool, "a corrupt value in \(location) was not served (\(reason))")
            return nil
        }
    }

    /// The origin could not tell a file's version (its `HEAD` failed): the tier is skipped for
    /// that fetch, counted and logged as a tier failure.
    func versionUnknown(pool: EntryID, because error: OriginFailure) {
        counters.count(pool) { $0.errors += 1 }
        failures.failed(pool: pool, "the origin did not tell a file's version, so the tier was not asked: \(error)")
    }

    private func key(pool: EntryID, path: [[UInt8]], suffix: [UInt8]) throws -> [UInt8] {
        let poolName = Array(try names.record(pool).name)
        let plainKey = SharedTierKey.key(pool: poolName, path: path, suffix: suffix)
        return try sealing?.key(pool: poolName, plainKey: plainKey) ?? plainKey
    }

    private func encode(_ content: [UInt8], at key: [UInt8]) throws -> [UInt8] {
        try sealing?.seal(content, at: key) ?? SharedTierValue.encode(content)
    }

    private func decode(_ value: [UInt8], at key: [UInt8]) -> Result<[UInt8], SharedTierValueError> {
        sealing?.open(value, at: key) ?? SharedTierValue.decode(value)
    }

    // MARK: Writing behind

    /// A user's write of `file` finished: queued for the tier if its pool has one and no
    /// origin (a file of an origin pool is shared as the origin's version it is, so one a
    /// user wrote there is not) and it is small enough. Never waits.
    func fileWritten(_ file: EntryRecord) {
        guard file.kind == .file, let settings = names.settings(ofPool: file.pool), settings.origin.isEmpty else { return }
        enqueue(.init(pool: file.pool, id: file.entryID), size: file.size, settings: settings)
    }

    /// A file of an origin pool is stored whole, fetched from the origin (not from the tier):
    /// queued for the tier under its version's `suffix`, as ``fileWritten(_:)`` queues.
    func fileFetched(_ id: EntryID, pool: EntryID, size: Int64, suffix: [UInt8]) {
        guard let settings = names.settings(ofPool: pool) else { return }
        enqueue(.init(pool: pool, id: id, suffix: suffix), size: size, settings: settings)
    }

    /// Queued if the pool has a tier and the file is within its `shared_max_file_size`; a
    /// full queue drops it (counted in `shared_dropped`).
    private func enqueue(_ item: SharedTierQueue.Item, size: Int64, settings: PoolSettings) {
        guard location(of: settings) != nil, settings.sharedMaxFileSize > 0, size <= settings.sharedMaxFileSize else { return }
        guard queue.add(item) == .full else { return }
        counters.count(item.pool) { $0.dropped += 1 }
        failures.failed(pool: item.pool, "the write-behind queue is full (\(queue.limit) files): a file was not shared")
    }

    /// On the writer's thread: the file's bytes as they are now, if it is still complete,
    /// within the pool's limit and unchanged while read.
    private func writeBehind(_ item: SharedTierQueue.Item) {
        let record: EntryRecord
        do {
            record = try names.record(item.id)
        } catch CacheError.notFound {
            return      // removed since its write ended: nothing to share
        } catch {
            counters.count(item.pool) { $0.errors += 1 }
            failures.failed(pool: item.pool, "a finished file could not be read from the index to share it: \(error)")
            return
        }
        guard let parent = record.parent, !record.writing,
              let settings = names.settings(ofPool: item.pool), let location = location(of: settings),
              record.size <= settings.sharedMaxFileSize else { return }
        do {
            let content = try readBytes(of: record)
            // Written again meanwhile: that write's end queues it again.
            let after = try names.record(item.id)
            guard after.size == record.size, after.mtime == record.mtime, !after.writing else { return }
            let key = try key(pool: item.pool, path: names.originPath(of: parent).path + [Array(record.name)],
                              suffix: item.suffix)
            try backends.backend(for: location).store(
                encode(content, at: key), at: key,
                deadline: NIODeadline.now() + .milliseconds(configuration.writeMilliseconds))
            counters.count(item.pool) { $0.bytesWritten += Int64(content.count) }
        } catch CacheError.notFound {
            // Removed meanwhile: nothing to share.
        } catch {
            counters.count(item.pool) { $0.errors += 1 }
            failures.failed(pool: item.pool, "writing to \(location) failed: \(error)")
        }
    }

    private func readBytes(of record: EntryRecord) throws -> [UInt8] {
        let (fd, kept) = try bytes.openToRead(record.entryID)
        defer { bytes.closeDescriptor(fd, of: record.entryID, kept: kept) }
        var content = [UInt8](repeating: 0, count: Int(record.size))
        var done = 0
        while done < content.count {
            let read = try content.withUnsafeMutableBytes { buffer in
                try bytes.disk.pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: Int64(done))
            }
            guard read > 0 else { throw CacheError.io(EIO) }
            done += read
        }
        return content
    }

    // MARK: Figures

    func figure(_ attribute: CacheAttribute, ofPool pool: EntryID) -> Int64 {
        let counts = counters.counts(of: pool)
        switch attribute {
        case .sharedHits: return counts.hits
        case .sharedMisses: return counts.misses
        case .sharedBytesRead: return counts.bytesRead
        case .sharedBytesWritten: return counts.bytesWritten
        case .sharedErrors: return counts.errors
        case .sharedDropped: return counts.dropped
        case .sharedQueue: return Int64(queue.waiting(inPool: pool))
        default: return 0
        }
    }
}
