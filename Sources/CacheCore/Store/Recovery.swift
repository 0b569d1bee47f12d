import CacheModel
import CacheNames
import Foundation
import Glibc
import Logging

/// Brings a store back to a consistent state when it is opened, whatever happened before.
///
/// It reads only the entries a crash can leave unfinished (an indexed query, never a walk of
/// the store): nameless entries whose bytes were kept for an open handle, and files that were
/// open for writing. A cached file caught mid-write is dropped, never served torn; a
/// persistent one keeps what reached the disk, as on any POSIX filesystem.
struct Recovery {
    let index: IndexDatabase
    let layout: StoreLayout
    let disk: any Disk
    let logger: Logger

    /// The usage rows follow every row this changes (triggers), so nothing is summed again.
    func run(afterPowerLoss: Bool, afterUncleanStop: Bool) throws {
        if afterPowerLoss { try recoverFromPowerLoss() }
        let unfinished = try index.unfinishedEntries()
        for var record in unfinished {
            let id = record.entryID
            let path = layout.objectPath(for: id)
            if record.parent != nil && record.persistent, let size = storedSize(path, of: id) {
                record.size = size
                record.writing = false
                try index.update(record)
                logger.warning("recovered persistent file \(id) with \(record.size) bytes after an unclean stop")
                continue
            }
            do throws(CacheError) {
                try disk.unlink(path)
            } catch let error where error.errno != ENOENT {
                throw error
            } catch {}
            try index.delete(id)
            if record.parent != nil {
                logger.warning("dropped cached file \(id) that was being written when the daemon stopped")
            }
        }
        if afterPowerLoss {
            try removeOrphanBytes()
        } else if afterUncleanStop {
            try removeBytesOfUncommittedEntries()
        }
    }

    /// Bytes created under ids of the last reserved ranges whose rows never committed (the
    /// daemon died within a commit window of their creation). Creates take their ids before
    /// the namespace lock, so rows commit in any order: a missing row can lie below the
    /// highest committed id. Every id without a row in the open range and the one before it
    /// (a create holding the previous range's last ids may commit after the next range's
    /// first) is looked at; only those ranges.
    private func removeBytesOfUncommittedEntries() throws {
        let bound = try IDReservation.reservedBound(in: index)
        let low = max(bound - 2 * IDReservation.chunk, 1)
        guard bound > low else { return }
        let committed = Set(try index.pool.read { db in
            try EntryID.fetchAll(db, sql: "SELECT id FROM entry WHERE id >= ? AND id < ?", arguments: [low, bound])
        })
        var removed = 0
        for id in low..<bound where !committed.contains(id) {
            do throws(CacheError) {
                try disk.unlink(layout.objectPath(for: id))
                removed += 1
            } catch where error.errno != ENOENT {
                throw error
            } catch {}
        }
        if removed > 0 { logger.warning("removed \(removed) stored objects whose entries never reached the index") }
    }

    /// After a power loss or OS crash, cached files whose bytes were not known to be on the
    /// disk may be torn: they are dropped. Persistent ones keep what reached the disk. The
    /// index itself may have lost its last commits, so bytes without an entry are removed
    /// by walking the objects folder (only in this case: a clean start walks nothing).
    private func recoverFromPowerLoss() throws {
        logger.warning("the store was not unmounted cleanly before a reboot: checking files not known durable")
        var dropped = 0
        for var record in try index.nonDurableFiles() {
            let path = layout.objectPath(for: record.entryID)
            if record.persistent && record.parent != nil, let size = storedSize(path, of: record.entryID) {
                record.size = size
                record.writing = false
                record.durable = true
                try index.update(record)
                continue
            }
            try index.delete(record.entryID)
            try removeIfPresent(path)
            if !record.persistent { dropped += 1 }
        }
        logger.warning("power-loss recovery dropped \(dropped) cached files not known durable")
    }

    /// The size of a persistent file's bytes, or nil when there are none to keep: they were
    /// never created (the stop came between the entry's insert and its bytes, before CREATE
    /// answered, so the file never existed for anyone), or they cannot be read, as an
    /// encrypted file whose tail was torn mid-block (no block layout gives its stored size).
    /// The caller drops the entry either way; a file someone saw is named in the log.
    private func storedSize(_ path: String, of id: EntryID) -> Int64? {
        do throws(CacheError) {
            return try disk.fileSize(path)
        } catch {
            if error.errno != ENOENT {
                logger.warning("dropped persistent file \(id): its stored bytes are torn or unreadable (\(String(cString: strerror(error.errno))))")
            }
            return nil
        }
    }

    /// Bytes already gone are what recovery wants; any other failure fails the mount, said.
    private func removeIfPresent(_ path: String) throws {
        do throws(CacheError) {
            try disk.unlink(path)
        } catch where error.errno == ENOENT {}
    }

    /// After a power loss the index may have lost its last commits, reservations included:
    /// bytes without an entry are found by walking the objects folder, the only walk at mount.
    func removeOrphanBytes() throws {
        let known = try index.allFileIDs()
        var orphans = 0
        for directory in StoreLayout.fanOutDirectories {
            let folder = layout.objectsPath + "/" + directory
            for name in try namesIfPresent(in: folder) {
                guard let id = EntryID(name), known.contains(id) else {
                    try removeIfPresent(folder + "/" + name)
                    orphans += 1
                    continue
                }
            }
        }
        if orphans > 0 { logger.warning("removed \(orphans) stored objects without an index entry") }
    }

    /// A fan-out folder that is missing holds no orphans; one that cannot be read fails the
    /// mount, named, rather than pass unchecked.
    private func namesIfPresent(in folder: String) throws -> [String] {
        do throws(CacheError) {
            return try disk.contentsIfPresent(folder)
        } catch {
            throw StoreError.cannotOpen(layout.root, "cannot list \(folder) to remove bytes without an index entry: \(String(cString: strerror(error.errno)))")
        }
    }
}
