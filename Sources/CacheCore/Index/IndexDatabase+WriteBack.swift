import CacheModel
import Foundation
import GRDB
import Glibc

/// Which file a path named when it was looked at: a removed or replaced file shows.
struct FileIdentity: Sendable, Equatable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// An index file removed (or replaced) while mounted. SQLite goes on with the file it has
/// open, unlinked, so nothing it commits would reach the next mount. The index writer
/// notices before a commit and writes the open database back under its name: at once,
/// then again while the mount lasts (see `IndexWriter`) and at unmount, so a clean unmount
/// loses nothing and a crash loses at most what came after the last write-back.
extension IndexDatabase {
    /// Whether the file at `path` is no longer the one this index has open.
    var isRemoved: Bool {
        guard let openedFile else { return false }
        return FileIdentity(path: path) != openedFile
    }

    /// Copies the open database, committed changes included, to a new file under the index's
    /// name (SQLite's backup API; the copy is a plain rollback-journal database that the
    /// next mount opens in WAL mode). The copy is written beside it and renamed into place,
    /// so a crash midway leaves the previous copy or none, never half of one.
    public func writeBack(disk: any Disk = PosixDisk()) throws {
        let temporary = path + ".writeback"
        try removeIfPresent(temporary, disk: disk)
        do {
            let copy = try DatabaseQueue(path: temporary)
            // Through the writer's connection, which is open: a reader connection opened
            // now would look for the file by its name, which is gone.
            try pool.writeWithoutTransaction { db in
                try copy.writeWithoutTransaction { target in try db.backup(to: target) }
            }
            try copy.close()
        }
        // Log files left under the index's name belong to the removed database; the new
        // file must not be read with them.
        try removeIfPresent(path + "-wal", disk: disk)
        try removeIfPresent(path + "-shm", disk: disk)
        try disk.rename(temporary, to: path)
        try disk.syncDirectory((path as NSString).deletingLastPathComponent)
    }

    private func removeIfPresent(_ path: String, disk: any Disk) throws {
        do throws(CacheError) {
            try disk.unlink(path)
        } catch where error.errno == ENOENT {}
    }
}
