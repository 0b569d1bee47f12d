import CacheModel
import CLinux
import Glibc
import Logging

/// Disk blocks allocated past the end of the index's write-ahead log, so the index can
/// always commit (above all the removals that free space) on a full disk.
///
/// *Why inside the log:* space freed anywhere else on the disk (a reserve file, say) is
/// free for everyone, and a data write running at the same moment takes it; blocks kept
/// past the log's end with `FALLOC_FL_KEEP_SIZE` are usable by SQLite's appends alone.
/// After a checkpoint SQLite rewrites the log from its start, inside blocks it already
/// has, so the headroom is used only while the log grows past its longest length.
///
/// Owned by the writer thread alone (not Sendable): it also holds the descriptor that
/// durable flushes sync. Only the log is opened here, never the database file: closing any
/// descriptor of a file drops every POSIX lock the process holds on it, SQLite's included.
struct LogHeadroom: ~Copyable {
    private let descriptor: Int32
    private let disk: any Disk
    private let logger: Logger
    /// The log's length when the headroom past it was last made whole.
    private var coveredLength: Int64 = -1
    private var unsupported = false

    init(walPath: String, disk: any Disk, logger: Logger) {
        self.disk = disk
        self.logger = logger
        do throws(CacheError) {
            descriptor = try disk.open(walPath, flags: O_RDWR, mode: 0)
        } catch {
            logger.error("cannot open the index log \(walPath): \(error)")
            descriptor = -1
        }
    }

    deinit {
        if descriptor >= 0 { disk.close(descriptor) }
    }

    /// Makes the headroom whole again if the log grew into it. Cheap when it did not (one
    /// `fstat`); on a full disk it stays short and is tried again after the next commit.
    mutating func replenish() {
        guard descriptor >= 0, !unsupported else { return }
        let length: Int64
        do throws(CacheError) {
            length = try disk.size(of: descriptor)
        } catch {
            logger.error("cannot read the index log's size: \(error)")
            return
        }
        guard length != coveredLength else { return }
        do throws(CacheError) {
            try disk.fallocate(descriptor, mode: FALLOC_FL_KEEP_SIZE, offset: length, length: Tunables.logHeadroomBytes)
            coveredLength = length
        } catch where error.errno == ENOSPC {
            // Short on a full disk: tried again after the next commit.
        } catch {
            logger.warning("cannot keep headroom past the index log: \(error)")
            unsupported = true
        }
    }

    /// Gives the blocks kept past the log's end back to the filesystem (at a clean stop,
    /// before the last checkpoint): a truncate to the log's own length, which drops them
    /// (a hole punched past the end would not: ext4 clamps it to the length).
    mutating func release() {
        guard descriptor >= 0, !unsupported, coveredLength >= 0 else { return }
        do throws(CacheError) {
            try disk.ftruncate(descriptor, length: try disk.size(of: descriptor))
            coveredLength = -1
        } catch {
            logger.warning("cannot give back the headroom past the index log: \(error)")
        }
    }

    /// Makes every committed frame durable. With `synchronous = NORMAL` SQLite syncs the
    /// database file itself after each checkpoint, so frames moved there are durable too.
    func sync() {
        guard descriptor >= 0 else { return }
        do throws(CacheError) {
            try disk.fsync(descriptor, dataOnly: false)
        } catch {
            logger.error("fsync of the index log failed: \(error)")
        }
    }
}
