import CacheModel
import Foundation
import Glibc

/// The fetch of a file of a read-through pool: started by its first open (single-flight), run
/// on a thread of its own under `max_fetches`, retried, and finished as an ordinary cached file
/// or dropped. Readers wait on its ``FetchProgress`` for the range they ask for.
extension ReadThrough {
    /// OPEN of a file whose bytes are not all stored: the fetch in flight, started now by
    /// the first opener (single-flight). Nil for any other file. A file not fetched yet that
    /// is larger than its pool's `max_size` now (lowered since the lookup) is EFBIG, unless
    /// it will be persistent.
    func joinFetch(_ id: EntryID) throws(CacheError) -> JoinedFetch? {
        guard let joined = try claimFetch(id) else { return nil }
        if case .whole(_, let start) = joined { start() }
        return joined
    }

    /// What an open of a file not all stored joins: its whole fetch (whose `start` the caller
    /// must call, see ``claimFetch(_:)``), or its blocks.
    enum JoinedFetch {
        case whole(FetchProgress, start: @Sendable () -> Void)
        case blocks(BlockedFile)
    }

    /// ``joinFetch(_:)`` whose fetch (if this call claimed it) starts only when the caller
    /// calls `start`, which it must do on every path: OPEN starts it once its handle is
    /// counted, since a file its pool does not keep is dropped when its fetch ends, and a
    /// small one could end before the opener holds it. A file held in blocks starts nothing:
    /// its reads fetch what they need.
    func claimFetch(_ id: EntryID) throws(CacheError) -> JoinedFetch? {
        // One look at the fetch table before the claim: this runs on every OPEN.
        var blockSize: Int64?
        if let pending = fetches.pendingSource(of: id) {
            blockSize = self.blockSize(for: pending, of: id)
            if blockSize == nil, pending.kept, names.isTooLargeToFetch(id, size: pending.size) {
                throw CacheError.fileTooLarge
            }
        }
        switch fetches.claim(id, blockSize: blockSize) {
        case nil: return nil
        case .blocks(let file)?: return .blocks(file)
        case .whole(let progress, startWith: nil)?: return .whole(progress, start: {})
        case .whole(let progress, startWith: let source?)?:
            counters.countOriginRequest(pool: source.pool)
            // With `kernel_hits` the reader that starts it is counted at its close: a miss.
            if names.kernelServesOpens.load(ordering: .relaxed) { fetches.noteFirstOpenIsMiss(id) }
            return .whole(progress, start: { [self] in
                fetchLimiter.run(pool: source.pool, fetches.counted { [self] in runFetch(id, source: source, progress: progress) })
            })
        }
    }

    /// A file whose bytes came with its lookup (``OriginBytes``): stored now, on the lookup's
    /// thread, as a fetch of its own that needs no `max_fetches` slot (it sends no request).
    func storeBytesDeliveredWithLookup(_ id: EntryID) {
        guard case .whole(let progress, let source?)? = fetches.claim(id) else { return }
        counters.countOriginRequest(pool: source.pool)
        fetches.noteFirstOpenIsMiss(id)
        runFetch(id, source: source, progress: progress)
    }

    /// The fetch, once it has its slot (``FetchLimiter``): counts the file against its pool,
    /// fetches with retries and finishes the entry or removes it.
    private func runFetch(_ id: EntryID, source: FetchSource, progress: FetchProgress) {
        if source.kept { countFetchedFile(id, pool: source.pool) }
        let started = ContinuousClock.now
        var outcome = fetchWithRetries(id, source: source, progress: progress)
        if fetches.isStopping { return }
        if case .success(let delivery) = outcome, !fetches.keeps(id) || refusesStore(delivery, pool: source.pool) {
            dropUnadmitted(id, source: source, reason: fetches.keeps(id)
                ? "served from the origin, not kept (Cache-Control: no-store)"
                : "served from the origin, not kept (admit_* settings)")
            progress.finish(.complete)
            fetches.remove(id)
            return
        }
        if case .success(let delivery) = outcome {
            do {
                try finishFetchedFile(id, source: source, version: delivery, took: ContinuousClock.now - started)
                validations.record(id, at: names.now.nanoseconds, version: delivery)
                // The kernel's caches of the name were given the pool's `revalidate` at the
                // lookup; the origin's own word (`cache_control`) may be shorter.
                if names.kernelServesOpens.load(ordering: .relaxed), names.settings(ofPool: source.pool)?.cacheControl == true {
                    names.kernelLooksUpAgain(file: id)
                }
                fetches.remove(id)
                progress.finish(.complete)
                if let front = source.origin as? SharedTierBeforeOrigin, let suffix = front.suffix(ofDelivered: delivery) {
                    sharedTier.fileFetched(id, pool: source.pool, size: source.size, suffix: suffix)
                }
                names.enforceLimitsIfOver(in: source.pool)
                return
            } catch {
                outcome = .failure(.failed("its bytes are stored but its entry could not be finished: \(error)"))
            }
        }
        guard case .failure(let failure) = outcome else { return }
        let error: CacheError = failure == .notFound ? .notFound : .io(EIO)
        progress.finish(.failed(error))
        if failure != .cancelled {
            counters.countFetchError(pool: source.pool)
            logger.error("fetch of \(display(source.path)) failed: \(events.shown("\(failure)"))")
            // Removed while its slot is still in the table: an open meanwhile joins the
            // failed fetch, never opens the partial bytes as a complete file.
            do {
                let record = try names.record(id)
                names.removeFiles([record], as: .fetchFailed, reason: "fetch from the origin failed: \(failure)")
            } catch CacheError.notFound {
                // Removed already: nothing is left to remove.
            } catch {
                // The slot stays, so every open joins the failed fetch (EIO) rather than read
                // partial bytes; unmount drops the entry with the other unfinished fetches.
                logger.error("could not read entry \(id) to remove it after its failed fetch; it answers EIO until unmount: \(error)")
                return
            }
        }
        // When the kernel serves opens, a reader that opened the file before it was removed
        // sends READs with no handle: the failed fetch stays in the table for them (EIO,
        // never the partial bytes) until the kernel forgets the inode (`dropIfPending`).
        if names.kernelServesOpens.load(ordering: .relaxed) && names.isHeldByKernel(id) { return }
        fetches.remove(id)
    }

    /// Whether the origin said not to keep what it delivered (`Cache-Control: no-store`) and
    /// the pool honours it (`cache_control`).
    private func refusesStore(_ delivery: OriginDelivery, pool: EntryID) -> Bool {
        names.settings(ofPool: pool)?.cacheControl == true && delivery.cachingWord.noStore
    }

    /// A file fetched for its readers and not kept (`admit_*`, `no-store`): removed while its slot is
    /// still in the table, as a failed fetch is, so no open meanwhile takes it for a complete
    /// file; the readers that have it open read on from their handles.
    private func dropUnadmitted(_ id: EntryID, source: FetchSource, reason: String) {
        counters.countNotAdmitted(pool: source.pool)
        do {
            let record = try names.record(id)
            names.removeFiles([record], as: .notAdmitted, reason: reason)
        } catch CacheError.notFound {
            // Removed already.
        } catch {
            logger.error("could not read entry \(id) to drop it after its fetch (not kept): \(error)")
        }
    }

    /// The fetch starts: from now the file counts against its pool at its announced size,
    /// so the evictor makes room before the bytes arrive and the limit holds while they do.
    /// (A file that lost its name meanwhile but is still open counts as pending usage.) A
    /// file that will be persistent (its directory is) counts nowhere until it is complete:
    /// it would only make the evictor free room that persistent files do not take.
    private func countFetchedFile(_ id: EntryID, pool: EntryID) {
        let named = names.countFetchStart(id)
        if named { names.enforceLimitsIfOver(in: pool) }
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

    /// Time to first byte is measured from here (the slot is taken: waiting for another
    /// fetch's slot is cachefs's doing, not the origin's) to the first byte stored, retries
    /// included, once per fetch.
    private func fetchWithRetries(_ id: EntryID, source: FetchSource, progress: FetchProgress) -> Result<OriginDelivery, FetchEnd> {
        let started = ContinuousClock.now
        var firstByteTimed = false
        let timeFirstByte = { [self] in
            guard !firstByteTimed else { return }
            firstByteTimed = true
            counters.countFirstByte(after: source.firstByteAfter ?? ContinuousClock.now - started, pool: source.pool)
        }
        var delay = originSettings.firstRetryDelaySeconds
        var attempt = 1
        while true {
            let result = fetchOnce(id, source: source, progress: progress, chunkStored: timeFirstByte)
            guard case .failure(.failed(let reason)) = result, attempt < originSettings.attempts,
                  !fetches.isStopping else { return result }
            logger.warning("fetch of \(display(source.path)) failed (attempt \(attempt)): \(events.shown(reason)); retrying")
            Thread.sleep(forTimeInterval: delay)
            delay *= 2
            attempt += 1
            progress.restart()
        }
    }

    private func fetchOnce(_ id: EntryID, source: FetchSource, progress: FetchProgress,
                           chunkStored: () -> Void) -> Result<OriginDelivery, FetchEnd> {
        let fd: Int32
        do {
            // The lookup created the bytes; gone, they went with the file (never recreated:
            // they would have no entry). Not truncated: a retry rewrites them from the start
            // and a fetch counts as done only with all `size` bytes written, and on ext4 a
            // truncated file is written back at its close, on this thread.
            fd = try bytes.disk.open(bytes.layout.objectPath(for: id), flags: O_RDWR, mode: 0)
        } catch .io(ENOENT) {
            return .failure(.cancelled)
        } catch {
            return .failure(.failed("cannot store the bytes: \(error)"))
        }
        defer { bytes.disk.close(fd) }
        var stored: Int64 = 0
        var storeError: CacheError?
        var cancelled = false
        // Counted and checked per MiB, not per part: parts are about 64 KiB, and each check
        // takes the namespace lock.
        var uncounted: Int64 = 0
        defer { counters.countFetchedBytes(uncounted, pool: source.pool) }
        let delivery: OriginDelivery
        do throws(OriginFailure) {
            delivery = try source.origin.fetch(source.path) { chunk in
                guard stored + Int64(chunk.count) <= source.size else {
                    stored += Int64(chunk.count)
                    return false
                }
                do throws(CacheError) {
                    let written = try eviction.freeingSpace(extra: Int64(chunk.count)) { () throws(CacheError) in
                        try writeAll(fd, chunk, at: stored)
                    }
                    stored += Int64(written)
                    uncounted += Int64(written)
                    chunkStored()
                } catch {
                    storeError = error
                    return false
                }
                progress.advance(to: stored)
                guard uncounted >= Tunables.fetchAccountingBytes else { return true }
                counters.countFetchedBytes(uncounted, pool: source.pool)
                uncounted = 0
                cancelled = !isWanted(id)
                return !cancelled
            }
        } catch {
            switch error {
            case .notFound: return .failure(.notFound)
            case .failed(let reason): return .failure(.failed(reason))
            case .changed: return .failure(.wrongSize(error.description))
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

    func writeAll(_ fd: Int32, _ chunk: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        var written = 0
        while written < chunk.count {
            written += try bytes.disk.pwrite(fd, from: UnsafeRawBufferPointer(rebasing: chunk[written...]),
                                       at: offset + Int64(written))
        }
        return written
    }

    /// A fetch goes on after its readers closed; it stops only when nobody can read the file
    /// any more (it was removed and no handle has it open) or the daemon stops.
    private func isWanted(_ id: EntryID) -> Bool {
        guard !fetches.isStopping else { return false }
        return names.isWanted(id)
    }

    /// The bytes are all stored: the entry becomes an ordinary cached file (persistent if its
    /// directory is), to be synced by the durability worker like any closed file. One not
    /// counted yet (it was to be persistent when its fetch started) counts from now. Throws
    /// when its record cannot be changed; the caller then drops it as a failed fetch.
    /// Its miss cost is the time the fetch `took`, retries included.
    private func finishFetchedFile(_ id: EntryID, source: FetchSource, version: OriginDelivery, took: Duration) throws {
        let time = names.now.nanoseconds
        let (seconds, attoseconds) = took.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        try names.finishFetch(id, blocks: Tunables.blocks(forSize: source.size), at: time,
                              fetchMilliseconds: milliseconds, version: version)
    }
}
