import CacheModel
import Foundation
import Glibc

/// Read-through pools: a name the pool lacks is asked of the pool's origin. A file the origin
/// has appears at once with the origin's size, as an entry marked `writing` (so recovery
/// drops it after a crash and no pass picks it as a victim) and a `pending` slot in the
/// ``FetchTable``, counted in no usage figure; its first open starts the one fetch, which
/// stores the bytes as they arrive while readers wait for their range.
extension ReadThrough {
    /// The origin of `pool` (behind its shared tier, if it has one), if it has one; else its
    /// shared tier, if it has one.
    func origin(ofPool pool: EntryID) -> (any Origin)? {
        guard let settings = names.settings(ofPool: pool) else { return nil }
        let url = settings.origin
        guard !url.isEmpty else { return sharedTier.origin(ofPool: pool, settings: settings) }
        switch OriginURL.origin(for: url, context: originContext) {
        case .success(let origin): return sharedTier.inFront(of: origin, pool: pool, settings: settings)
        case .failure(let reason):
            logger.error("origin \(events.shown(url)) of pool \(pool) cannot be used: \(events.shown("\(reason)"))")
            return nil
        }
    }

    /// LOOKUP of a name the pool lacks: the origin's file or directory, added to the pool, or
    /// nil when the pool has no origin. Throws ENOENT for a name the origin lacks (and
    /// remembers that for negative_ttl), EFBIG for a file larger than the pool, EIO when the
    /// origin cannot answer.
    func lookupInOrigin(parent: EntryID, name: [UInt8], pool: EntryID) throws -> FileAttributes? {
        guard pool != 0, let origin = origin(ofPool: pool) else { return nil }
        let time = names.now
        if negativeMisses.contains(parent: parent, name: name, at: time) { throw CacheError.notFound }
        let path = try names.originPath(of: parent).path + [name]
        let found: OriginEntry
        do {
            found = try origin.lookup(path)
        } catch {
            counters.countFetchError(pool: pool)
            logger.error("origin lookup of \(display(path)) failed: \(events.shown("\(error)"))")
            throw CacheError.io(EIO)
        }
        switch found {
        case .missing:
            negativeMisses.remember(parent: parent, name: name, at: time, forSeconds: names.settings(ofPool: pool)?.negativeTTLSeconds ?? PoolSettings.defaultNegativeTTLSeconds)
            throw CacheError.notFound
        case .directory:
            return try addOriginEntry(parent: parent, name: name, kind: .directory, size: 0, source: nil).attributes
        case .file(let size):
            let source = FetchSource(origin: origin, path: path, pool: pool, size: size,
                                     kept: admits(path, size: size, pool: pool))
            return try addOriginEntry(parent: parent, name: name, kind: .file, size: size, source: source).attributes
        case .fileWithBytes(let fetched):
            let size = Int64(fetched.bytes.count)
            guard admits(path, size: size, pool: pool) else {
                // Not kept: fetched again at its open rather than stored at its lookup, since
                // a file dropped before anyone opened it would send the opener back to a
                // lookup; nor are its bytes held in memory until then.
                let source = FetchSource(origin: origin, path: path, pool: pool, size: size, kept: false)
                return try addOriginEntry(parent: parent, name: name, kind: .file, size: size, source: source).attributes
            }
            let source = FetchSource(origin: DeliveredBytes(fetched: fetched), path: path, pool: pool,
                                     size: size, firstByteAfter: fetched.firstByteAfter)
            let added = try addOriginEntry(parent: parent, name: name, kind: .file, size: source.size, source: source)
            guard added.isNew else { return added.attributes }
            storeBytesDeliveredWithLookup(added.attributes.id)
            // Stored (or, if that failed, removed again): the kernel learns the entry as it is now.
            // The lookup counted above keeps its inode in memory, so the read cannot fail.
            return (try? names.record(added.attributes.id))?.attributes ?? added.attributes
        }
    }

    /// Whether `pool` keeps the origin's file at `path` once fetched: within its `admit_max_size`
    /// and `admit_min_size`, and at its `admit_after`th miss within `admit_window` (this lookup
    /// counts one).
    private func admits(_ path: [[UInt8]], size: Int64, pool: EntryID) -> Bool {
        guard let settings = names.settings(ofPool: pool) else { return true }
        guard settings.admits(size: size) else { return false }
        guard settings.admitAfter > 1 else { return true }
        let key = MissCounts.key(pool: pool, path: path)
        let misses = missCounts.countMiss(key, at: names.now.nanoseconds,
                                          window: PoolSettings.nanoseconds(settings.admitWindowSeconds))
        guard misses >= settings.admitAfter else { return false }
        missCounts.forget(key)
        return true
    }

    private func addOriginEntry(parent: EntryID, name: [UInt8], kind: EntryKind, size: Int64,
                                source: FetchSource?) throws -> (attributes: FileAttributes, isNew: Bool) {
        let id = try names.takeID()
        // Empty bytes, so the file opens before its fetch starts; made before the namespace
        // lock as `create` does (recovery clears bytes of ids whose row never committed).
        if kind == .file {
            bytes.disk.close(try bytes.makeBytes(for: id))
        }
        let addPendingFetch = source.map { source in { [fetches] (id: EntryID) in fetches.addPending(id, source: source) } }
        // A file held in blocks may be larger than its pool: only what is read is kept.
        let refusedIfTooLarge = (source?.kept ?? true) && !(source.map(heldInBlocks) ?? false)
        let added = Result { try names.addOriginEntry(id, parent: parent, name: name, kind: kind, size: size,
                                                      keptIfFetched: refusedIfTooLarge,
                                                      addPendingFetch: addPendingFetch) }
        // A failed add (rethrown below) also means the bytes made for it are not needed.
        if kind == .file, (try? added.get().isNew) != true { bytes.unlink([id]) }
        return try added.get()
    }
}

extension ReadThrough {
    /// What the origin of `directory`'s pool lists there, or nil (no listable origin, or it
    /// failed: the listing then shows the pool's own names, and the log says why).
    func originNames(in directory: EntryID) -> [OriginName]? {
        let pool: EntryID, path: [[UInt8]]
        do {
            (pool, path) = try names.originPath(of: directory)
        } catch {
            // Gone meanwhile: the listing itself answers ENOENT. Anything else is said here,
            // since the listing then shows the pool's own names only.
            if case CacheError.notFound = error {} else {
                logger.error("listing \(directory): cannot find its place in the origin: \(events.shown("\(error)"))")
            }
            return nil
        }
        guard pool != 0, let origin = origin(ofPool: pool) else { return nil }
        do {
            return try origin.list(path)
        } catch {
            logger.error("listing the origin of \(directory) failed: \(events.shown("\(error)"))")
            return nil
        }
    }
}
