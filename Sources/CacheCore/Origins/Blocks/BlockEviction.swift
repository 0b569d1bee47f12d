import CacheModel
import CacheNames
import Glibc
import Logging
import Synchronization

/// Frees room in a pool by dropping the coldest blocks of its files held in blocks (least
/// recently read or fetched first; never a block being read or fetched). Blocks go before
/// any whole file: they are the parts of files too large, or read too sparsely, to be kept
/// whole, a block comes back with one ranged request, and a scan of a large object then
/// cycles through its own blocks instead of flushing the pool's small hot files.
/// Called by a block's fetch before it stores a block, and by the evictor's size pass.
final class BlockEviction: Sendable {
    private let fetches: FetchTable
    private let names: Names
    private let bytes: ObjectFiles
    private let logger: Logger
    /// Held across a block's room and its reservation (see ``reserve(_:of:)``); taken before
    /// the namespace, never by the evictor.
    private let reservations = Mutex(())

    init(fetches: FetchTable, names: Names, bytes: ObjectFiles, logger: Logger) {
        self.fetches = fetches
        self.names = names
        self.bytes = bytes
        self.logger = logger
    }

    /// Drops cold blocks of `pool` until `wanted` bytes are freed or none is left to drop;
    /// returns the bytes freed.
    @discardableResult
    func free(_ wanted: Int64, in pool: EntryID) -> Int64 {
        guard wanted > 0 else { return 0 }
        var candidates: [(lastUse: UInt64, file: BlockedFile, index: Int)] = []
        for file in fetches.blockedFiles(in: pool) {
            candidates += file.droppable().map { ($0.lastUse, file, $0.index) }
        }
        candidates.sort { $0.lastUse < $1.lastUse }
        var freed: Int64 = 0
        for candidate in candidates where freed < wanted {
            var dropped: Int64 = 0
            names.countBlockBytes(candidate.file.id) {
                dropped = candidate.file.beginDrop(candidate.index)
                return dropped
            }
            guard dropped < 0 else { continue }
            discard(candidate.file, candidate.index)
            candidate.file.endDrop(candidate.index)
            freed -= dropped
        }
        return freed
    }

    /// Makes room for a block of `file` in its pool, within `max_size`, from blocks only, and
    /// counts it (``BlockedFile/reserve(_:)``) before another block's fetch can take that
    /// room: the two under one lock, so concurrent fetches never add up past the limit.
    func reserve(_ index: Int, of file: BlockedFile) {
        let pool = file.source.pool
        let length = Int64(file.range(ofBlock: index).count)
        reservations.withLock { _ in
            if let settings = names.settings(ofPool: pool), settings.maxSize > 0 {
                free(names.usage(of: pool).cachedBytes + length - settings.maxSize, in: pool)
            }
            names.countBlockBytes(file.id) { file.reserve(index) }
        }
    }

    /// The block's stored bytes are freed. A failure leaves them on the disk (counted out
    /// already, and gone with the file); it is logged, never served: the block is absent.
    private func discard(_ file: BlockedFile, _ index: Int) {
        let range = file.range(ofBlock: index)
        do {
            let fd = try bytes.disk.open(bytes.layout.objectPath(for: file.id), flags: O_RDWR, mode: 0)
            defer { bytes.disk.close(fd) }
            try bytes.disk.discardPart(fd, offset: range.lowerBound, length: range.upperBound - range.lowerBound)
        } catch .io(ENOENT) {
            // The file went meanwhile, its bytes with it.
        } catch {
            logger.error("could not free block \(index) of entry \(file.id): \(error)")
        }
    }
}
