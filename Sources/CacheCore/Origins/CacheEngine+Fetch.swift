import Foundation
import Glibc

/// The fetch of a file of a read-through pool: started by its first open (single-flight), run
/// on a thread of its own under `max_fetches`, retried, and finished as an ordinary cached file
/// or dropped. Readers wait on its ``FetchProgress`` for the range they ask for.
extension CacheEngine {
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
        let outcome = fetchLimiter.withSlot(pool: source.pool, limit: {
            Int(policies.withLock { $0[source.pool]?.maxFetches } ?? PoolPolicy.defaultMaxFetches)
        }) { fetchWithRetries(id, source: source, progress: progress) }
        if fetches.isStopping { return }
        switch outcome {
        case .success(let delivery):
            finishFetchedFile(id, source: source, version: delivery)
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

    private func fetchWithRetries(_ id: EntryID, source: FetchSource, progress: FetchProgress) -> Result<OriginDelivery, FetchEnd> {
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

    private func fetchOnce(_ id: EntryID, source: FetchSource, progress: FetchProgress) -> Result<OriginDelivery, FetchEnd> {
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
        let delivery: OriginDelivery
        do throws(OriginFailure) {
            delivery = try source.origin.fetch(source.path) { chunk in
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
        return .success(delivery)
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
    private func finishFetchedFile(_ id: EntryID, source: FetchSource, version: OriginDelivery) {
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
            writer.enqueue([.action { db in try IndexStore.setOriginVersion(id, etag: version.etag, lastModified: version.lastModified, in: db) }])
        }
    }

    private func fetchedBytes(_ count: Int64, pool: EntryID) {
        counters.withLock { $0.fetchedBytes[pool, default: 0] += count }
    }

    func countFetchError(pool: EntryID) {
        counters.withLock { $0.fetchErrors[pool, default: 0] += 1 }
    }

    /// `user.cache.fetching` of a file: `received/total` while its fetch runs, else empty.
    func fetchingValue(of id: EntryID) -> String {
        guard let snapshot = fetches.progress(of: id).map({ ($0.snapshot.received, $0.total) }) else { return "" }
        return "\(snapshot.0)/\(snapshot.1)"
    }

    func display(_ path: [[UInt8]]) -> String {
        path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }
}
