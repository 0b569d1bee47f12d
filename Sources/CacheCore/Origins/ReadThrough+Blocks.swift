import CacheModel
import Foundation
import Glibc

/// Files held in blocks (``BlockedFile``): a read fetches the blocks it lacks, each with one
/// ranged request under the pool's `max_fetches`, and a sequential reader has the next
/// blocks fetched ahead. A block is stored whole before anyone reads it; once every block is
/// held (and the file fits its pool) it becomes an ordinary cached file.
extension ReadThrough {
    /// The block size a file not opened yet (its `source`) is held in, or nil to fetch it whole: a file kept
    /// by its pool, larger than one block, of an origin that serves ranges, and not to be
    /// persistent (a persistent file is kept whole).
    func blockSize(for source: FetchSource, of id: EntryID) -> Int64? {
        guard heldInBlocks(source), !names.becomesPersistentWhenFetched(id) else { return nil }
        return names.settings(ofPool: source.pool)?.blockSize
    }

    /// Whether a file of `source` is held in blocks, as far as its pool and origin tell: its
    /// pool must have room for two blocks at least, or a block stored for a reader could be
    /// dropped for the next before the reader had it.
    func heldInBlocks(_ source: FetchSource) -> Bool {
        guard source.kept, source.origin.fetchesRanges, let settings = names.settings(ofPool: source.pool) else { return false }
        return settings.blockSize > 0 && source.size > settings.blockSize
            && (settings.maxSize == 0 || settings.maxSize >= 2 * settings.blockSize)
    }

    /// Runs `body` (the read of `offset..<offset + size`) once the blocks it touches are held,
    /// fetching those absent; they stay held until `body` returns.
    func withBlocks<T>(_ file: BlockedFile, offset: Int64, size: Int, _ body: () throws -> T) throws -> T {
        let pinned = try pinBlocks(file, offset: offset, size: size)
        defer { file.endRead(pinned) }
        return try body()
    }

    /// Waits until the blocks `offset..<offset + size` touches are held, fetching those absent,
    /// and pins them (a pinned block is never dropped) until the caller's `endRead` of the
    /// range returned; a sequential reader's next blocks are fetched ahead.
    func pinBlocks(_ file: BlockedFile, offset: Int64, size: Int) throws -> Range<Int> {
        let wanted = file.blocks(covering: offset, length: size)
        var waitedFor: [Int: UInt32] = [:]
        waiting: while true {
            switch file.look(at: wanted, waitedFor: &waitedFor) {
            case .ready: break waiting
            case .failed(let error): throw error
            case .fetch(let blocks): for index in blocks { startFetch(of: index, in: file) }
            }
        }
        for index in file.noteRead(offset: offset, end: offset + Int64(size), ahead: readAhead(for: file)) {
            startFetch(of: index, in: file)
        }
        return wanted
    }

    /// Every byte of a file not all stored, stored now (a write or truncation, `persistent`,
    /// a pin): its whole fetch waited for, or every block read.
    func fetchWhole(_ id: EntryID) throws {
        switch try joinFetch(id) {
        case nil: return
        case .whole(let progress, _)?: try progress.waitForCompletion()
        case .blocks(let file)?: try makeWhole(file)
        }
    }

    /// Reads every block (an open for writing, `persistent`, a pin): the file is whole after,
    /// unless it is larger than its pool allows, which answers EFBIG.
    func makeWhole(_ file: BlockedFile) throws {
        if names.isTooLargeToFetch(file.id, size: file.source.size) { throw CacheError.fileTooLarge }
        var offset: Int64 = 0
        while offset < file.source.size {
            let span = Int(min(file.blockSize * Int64(readAhead(for: file) + 1), file.source.size - offset))
            try withBlocks(file, offset: offset, size: span) {}
            offset += Int64(span)
        }
        if file.retirement != .whole { finishIfWhole(file) }
        if case .gone(let error) = file.retirement { throw error }
    }

    /// Blocks fetched ahead of a sequential reader: up to ``Tunables/readAheadBlocks`` within
    /// the pool's `max_fetches` (one lane stays for the block being read), and never so many
    /// that they and the block read would fill half the pool.
    private func readAhead(for file: BlockedFile) -> Int {
        guard let settings = names.settings(ofPool: file.source.pool) else { return 0 }
        var ahead = min(Tunables.readAheadBlocks, max(Int(settings.maxFetches) - 1, 0))
        if settings.maxSize > 0 { ahead = min(ahead, Int(settings.maxSize / 2 / file.blockSize) - 1) }
        return max(ahead, 0)
    }

    private func startFetch(of index: Int, in file: BlockedFile) {
        counters.countOriginRequest(pool: file.source.pool)
        fetchLimiter.run(pool: file.source.pool, fetches.counted { [self] in fetchBlock(index, of: file) })
    }

    /// One block's ranged request, retried like a whole fetch; its bytes come whole in memory
    /// and are written in one piece (an encrypted store seals whole blocks).
    private func fetchBlock(_ index: Int, of file: BlockedFile) {
        let source = file.source
        let range = file.range(ofBlock: index)
        let length = Int(range.upperBound - range.lowerBound)
        var delay = originSettings.firstRetryDelaySeconds
        var attempt = 1
        var outcome: Result<OriginPart, OriginFailure>
        while true {
            do throws(OriginFailure) {
                let part = try source.origin.fetch(source.path, range: range, sameVersionAs: file.version)
                outcome = part.bytes.count == length ? .success(part)
                    : .failure(.failed("the origin delivered \(part.bytes.count) of the \(length) bytes asked for at \(range.lowerBound)"))
            } catch {
                outcome = .failure(error)
            }
            guard case .failure(.failed(let reason)) = outcome, attempt < originSettings.attempts,
                  !fetches.isStopping else { break }
            logger.warning("fetch of block \(index) of \(display(source.path)) failed (attempt \(attempt)): \(events.shown(reason)); retrying")
            Thread.sleep(forTimeInterval: delay)
            delay *= 2
            attempt += 1
        }
        if fetches.isStopping {
            fail(index, of: file, .io(EIO))
            return
        }
        switch outcome {
        case .success(let part):
            do {
                try store(part.bytes, asBlock: index, of: file, version: part.delivery)
            } catch .io(ENOENT) {
                // Removed, and no handle had it open: its bytes went, and nobody waits.
                fail(index, of: file, .stale)
            } catch {
                counters.countFetchError(pool: source.pool)
                logger.error("could not store block \(index) of \(display(source.path)): \(error)")
                fail(index, of: file, error)
            }
        case .failure(.changed), .failure(.notFound):
            dropChanged(file, failing: index)
        case .failure(let failure):
            counters.countFetchError(pool: source.pool)
            logger.error("fetch of block \(index) of \(display(source.path)) failed: \(events.shown("\(failure)"))")
            fail(index, of: file, .io(EIO))
        }
    }

    private func store(_ block: BlockBuffer, asBlock index: Int, of file: BlockedFile, version: OriginDelivery) throws(CacheError) {
        let pool = file.source.pool
        blockEviction.reserve(index, of: file)
        let fd = try bytes.disk.open(bytes.layout.objectPath(for: file.id), flags: O_RDWR, mode: 0)
        defer { bytes.disk.close(fd) }
        try bytes.disk.sizeForParts(fd, to: file.source.size)
        let offset = file.range(ofBlock: index).lowerBound
        _ = try eviction.freeingSpace(extra: Int64(block.count)) { () throws(CacheError) in
            try writeAll(fd, block.bytes, at: offset)
        }
        if file.markHeld(index, version: version) == nil {
            dropChanged(file, failing: index)
            return
        }
        counters.countFetchedBytes(Int64(block.count), pool: pool)
        names.enforceLimitsIfOver(in: pool)
        finishIfWhole(file)
    }

    /// A block's fetch or store failed: its readers get `error`, and what it reserved is
    /// counted out in the same hold.
    private func fail(_ index: Int, of file: BlockedFile, _ error: CacheError) {
        names.countBlockBytes(file.id) { file.markFailed(index, error) }
    }

    /// Every block is held and the file fits its pool: an ordinary cached file from now.
    private func finishIfWhole(_ file: BlockedFile) {
        guard file.retirement == nil, file.isWhole, !names.isTooLargeToFetch(file.id, size: file.source.size) else { return }
        let version = file.version ?? OriginDelivery(bytes: file.source.size)
        do {
            try names.finishFetch(file.id, blocks: Tunables.blocks(forSize: file.source.size), at: names.now.nanoseconds,
                                  fetchMilliseconds: 0, version: version)
            validations.record(file.id, at: names.now.nanoseconds, version: version)
            names.enforceLimitsIfOver(in: file.source.pool)
        } catch {
            logger.error("could not finish \(display(file.source.path)), whole now; it stays held in blocks: \(error)")
        }
    }

    /// The origin's file is another version than the blocks held (or gone): the file is
    /// dropped as any changed file, and every read of it fails from now (EIO), also through
    /// handles open on it: no read mixes blocks of two versions.
    private func dropChanged(_ file: BlockedFile, failing index: Int) {
        logger.notice("\(display(file.source.path)) changed at the origin while held in blocks; dropped")
        do {
            let record = try names.record(file.id)
            names.removeFiles([record], as: .changedAtOrigin, reason: "changed at the origin while held in blocks")
        } catch CacheError.notFound {
            // Removed already.
        } catch {
            logger.error("could not read entry \(file.id) to drop it after its origin changed: \(error)")
        }
        names.countBlockBytes(file.id) { -file.retire(.gone(.io(EIO))) }
        file.markFailed(index, .io(EIO))
    }
}
