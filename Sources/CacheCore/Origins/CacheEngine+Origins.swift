import Foundation
import Glibc

/// Read-through pools: a name the pool lacks is asked of the pool's origin. A file the origin
/// has appears at once with the origin's size, as an entry marked `writing` (so recovery
/// drops it after a crash) and a `pending` slot in the ``FetchTable``; its first open starts
/// the one fetch, which stores the bytes as they arrive while readers wait for their range.
extension CacheEngine {
    /// The origin of `pool`, if it has one.
    func origin(ofPool pool: EntryID) -> (any Origin)? {
        guard let url = policies.withLock({ $0[pool]?.origin }), !url.isEmpty else { return nil }
        switch OriginURL.origin(for: url) {
        case .success(let origin): return origin
        case .failure(let reason):
            logger.error("origin \(url) of pool \(pool) cannot be used: \(reason)")
            return nil
        }
    }

    /// LOOKUP of a name the pool lacks: the origin's file or directory, added to the pool, or
    /// nil when the pool has no origin. Throws ENOENT for a name the origin lacks (and
    /// remembers that for negative_ttl), EFBIG for a file larger than the pool, EIO when the
    /// origin cannot answer.
    func lookupInOrigin(parent: EntryID, name: [UInt8], pool: EntryID) throws -> FileAttributes? {
        guard pool != 0, let origin = origin(ofPool: pool) else { return nil }
        let time = now
        if negativeMisses.contains(parent: parent, name: name, at: time) { throw CacheError.notFound }
        let path = try namespace.withLock { try originPath(of: parent, in: &$0) } + [name]
        let found: OriginEntry
        do {
            found = try origin.lookup(path)
        } catch {
            countFetchError(pool: pool)
            logger.error("origin lookup of \(display(path)) failed: \(error)")
            throw CacheError.io(EIO)
        }
        switch found {
        case .missing:
            negativeMisses.remember(parent: parent, name: name, at: time, forSeconds: originSettings.negativeTTLSeconds)
            throw CacheError.notFound
        case .directory:
            return try addOriginEntry(parent: parent, name: name, kind: .directory, size: 0, source: nil)
        case .file(let size):
            let source = FetchSource(origin: origin, path: path, pool: pool, size: size)
            return try addOriginEntry(parent: parent, name: name, kind: .file, size: size, source: source)
        }
    }

    /// The path below the pool of a directory in it, as the origin names it.
    func originPath(of directory: EntryID, in namespace: inout NamespaceState) throws -> [[UInt8]] {
        var components: [[UInt8]] = []
        var current = try namespace.record(directory)
        while !current.isPool, let parent = current.parent, components.count < 4096 {
            components.append(Array(current.name))
            current = try namespace.record(parent)
        }
        return components.reversed()
    }

    private func addOriginEntry(parent: EntryID, name: [UInt8], kind: EntryKind, size: Int64,
                                source: FetchSource?) throws -> FileAttributes {
        let id = try takeID()
        // Empty bytes, so the file opens before its fetch starts; made before the namespace
        // lock as `create` does (recovery clears bytes of ids whose row never committed).
        if kind == .file {
            disk.close(try disk.open(layout.objectPath(for: id), flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600))
        }
        let added = Result { try namespace.withLock { namespace -> (attributes: FileAttributes, isNew: Bool) in
            let parentRecord = try directory(parent, in: &namespace)
            // Another lookup (or a create) added the name meanwhile.
            if let existing = try namespace.child(of: parent, named: Data(name)) {
                namespace.modify(existing.entryID) { $0.lookups += 1 }
                return (existing.attributes, false)
            }
            if kind == .file, !parentRecord.persistent, let limit = sizeLimit(for: parentRecord), size > limit {
                throw CacheError.fileTooLarge
            }
            let time = now.nanoseconds
            let owner = Caller(uid: parentRecord.uid, gid: parentRecord.gid, pid: 0)
            var created = newRecord(id, kind: kind, name: Data(name), in: parentRecord,
                                    mode: kind == .directory ? 0o755 : 0o644, caller: owner, at: time)
            if kind == .file {
                // Incomplete until the fetch ends; persistence (which recovery would keep
                // torn) is taken from the directory only then.
                created.size = size
                created.writing = true
                created.durable = false
                created.persistent = false
            }
            namespace.add(created)
            namespace.log(.insert(created))
            touch(parent, at: time, in: &namespace, subdirectories: kind == .directory ? 1 : 0)
            namespace.modify(id) { $0.lookups += 1 }
            if let source {
                usage.addFile(1, bytes: size, pool: created.pool, persistent: false)
                fetches.addPending(id, source: source)
                if isOverLimit(created.pool) { evictor.requestEnforcement(of: [created.pool]) }
            }
            return (created.attributes, true)
        } }
        if kind == .file, (try? added.get().isNew) != true { unlinkBytes(of: [id]) }
        return try added.get().attributes
    }

    /// OPEN of a file whose bytes are not all stored: the fetch in flight, started now by
    /// the first opener (single-flight). Nil for any other file.
    func joinFetch(_ id: EntryID) -> FetchProgress? {
        guard let claimed = fetches.claim(id) else { return nil }
        if let source = claimed.startWith {
            counters.withLock { $0.originRequests[source.pool, default: 0] += 1 }
            let progress = claimed.progress
            fetches.runThread(name: "cachefs-fetch") { [self] in runFetch(id, source: source, progress: progress) }
        }
        return claimed.progress
    }

    /// The fetch thread: waits for a slot under max_fetches, then fetches with retries and
    /// finishes the entry or removes it.
    private func runFetch(_ id: EntryID, source: FetchSource, progress: FetchProgress) {
        let outcome = fetchLimiter.withSlot(pool: source.pool) { fetchWithRetries(id, source: source, progress: progress) }
        if fetches.isStopping { return }
        switch outcome {
        case .success:
            finishFetchedFile(id, source: source)
            fetches.remove(id)
            progress.finish(.complete)
        case .failure(let failure):
            let error: CacheError = failure == .notFound ? .notFound : .io(EIO)
            progress.finish(.failed(error))
            fetches.remove(id)
            if failure == .cancelled { return }
            countFetchError(pool: source.pool)
            logger.error("fetch of \(display(source.path)) failed: \(failure)")
            if let record = try? record(id) {
                removeFiles([record], as: .fetchFailed, reason: "fetch from the origin failed: \(failure)")
            }
        }
    }

    enum FetchEnd: Error, Equatable, CustomStringConvertible {
        case notFound
        case cancelled
        /// The origin delivered another size than it announced: retrying would not help.
        case wrongSize(String)
        case failed(String)

        var description: String {
            switch self {
            case .notFound: return "the origin no longer has it"
            case .cancelled: return "cancelled: nobody wants the file any more"
            case .wrongSize(let reason), .failed(let reason): return reason
            }
        }
    }

    private func fetchWithRetries(_ id: EntryID, source: FetchSource, progress: FetchProgress) -> Result<Void, FetchEnd> {
        // The `writing` mark of the entry commits before its first byte is stored.
        writer.flush()
        var delay = originSettings.firstRetryDelaySeconds
        var attempt = 1
        while true {
            let result = fetchOnce(id, source: source, progress: progress)
            guard case .failure(.failed(let reason)) = result, attempt < originSettings.attempts,
                  !fetches.isStopping else { return result }
            logger.warning("fetch of \(display(source.path)) failed (attempt \(attempt)): \(reason); retrying")
            Thread.sleep(forTimeInterval: delay)
            delay *= 2
            attempt += 1
            progress.restart()
        }
    }

    private func fetchOnce(_ id: EntryID, source: FetchSource, progress: FetchProgress) -> Result<Void, FetchEnd> {
        let fd: Int32
        do {
            fd = try disk.open(layout.objectPath(for: id), flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        } catch {
            return .failure(.failed("cannot store the bytes: \(error)"))
        }
        defer { disk.close(fd) }
        var stored: Int64 = 0
        var storeError: CacheError?
        var cancelled = false
        do throws(OriginFailure) {
            _ = try source.origin.fetch(source.path) { chunk in
                guard stored + Int64(chunk.count) <= source.size else {
                    stored += Int64(chunk.count)
                    return false
                }
                do throws(CacheError) {
                    let written = try freeingSpace(extra: Int64(chunk.count)) { () throws(CacheError) in
                        try writeAll(fd, chunk, at: stored)
                    }
                    stored += Int64(written)
                    fetchedBytes(Int64(written), pool: source.pool)
                } catch {
                    storeError = error
                    return false
                }
                progress.advance(to: stored)
                cancelled = !isWanted(id)
                return !cancelled
            }
        } catch {
            switch error {
            case .notFound: return .failure(.notFound)
            case .failed(let reason): return .failure(.failed(reason))
            case .sizeMismatch(let announced, let delivered):
                return .failure(.wrongSize("\(delivered) bytes delivered, \(announced) announced"))
            }
        }
        if let storeError { return .failure(.failed("cannot store the bytes: \(storeError)")) }
        if cancelled || fetches.isStopping { return .failure(.cancelled) }
        guard stored == source.size else {
            return .failure(.wrongSize("the origin delivered \(stored) bytes, \(source.size) announced"))
        }
        return .success(())
    }

    private func writeAll(_ fd: Int32, _ chunk: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        var written = 0
        while written < chunk.count {
            written += try disk.pwrite(fd, from: UnsafeRawBufferPointer(rebasing: chunk[written...]),
                                       at: offset + Int64(written))
        }
        return written
    }

    /// A fetch goes on after its readers closed; it stops only when nobody can read the file
    /// any more (it was removed and no handle has it open) or the daemon stops.
    private func isWanted(_ id: EntryID) -> Bool {
        guard !fetches.isStopping else { return false }
        return namespace.withLock { namespace in
            guard let inode = namespace.inodes[id] else { return false }
            return inode.record.parent != nil || inode.openHandles > 0
        }
    }

    /// The bytes are all stored: the entry becomes an ordinary cached file (persistent if its
    /// directory is), to be synced by the durability worker like any closed file.
    private func finishFetchedFile(_ id: EntryID, source: FetchSource) {
        let time = now.nanoseconds
        namespace.withLock { namespace in
            guard let inode = namespace.inodes[id], inode.record.parent != nil else { return }
            let inheritsPersistence = inode.record.parent.flatMap { try? namespace.record($0) }?.persistent ?? false
            _ = try? update(id, in: &namespace) { record in
                record.writing = false
                record.blocks = (source.size + 4095) / 4096 * 8
                record.lastAccess = time
                if inheritsPersistence { record.persistent = true }
            }
        }
    }

    private func fetchedBytes(_ count: Int64, pool: EntryID) {
        counters.withLock { $0.fetchedBytes[pool, default: 0] += count }
    }

    private func countFetchError(pool: EntryID) {
        counters.withLock { $0.fetchErrors[pool, default: 0] += 1 }
    }

    /// `user.cache.fetching` of a file: `received/total` while its fetch runs, else empty.
    func fetchingValue(of id: EntryID) -> String {
        guard let snapshot = fetches.progress(of: id).map({ ($0.snapshot.received, $0.total) }) else { return "" }
        return "\(snapshot.0)/\(snapshot.1)"
    }

    private func display(_ path: [[UInt8]]) -> String {
        path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }
}
