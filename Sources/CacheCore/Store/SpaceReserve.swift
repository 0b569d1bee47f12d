import CacheModel
import Glibc
import Logging
import Synchronization

/// `Tunables.reserveBytes` held in `STORE/reserve` while the store is not mounted, so that a mount
/// on a full disk can still commit its recovery and settings. While mounted the headroom
/// lives past the end of the index's log instead (``LogHeadroom``), where data writes
/// cannot take it: the mount hands the reserve over once its writer runs, and a clean
/// unmount takes it back after the log is truncated.
final class SpaceReserve: Sendable {
    private let path: String
    private let logger: Logger
    private let disk: any Disk
    private let held: Mutex<Bool>

    init(path: String, disk: any Disk, logger: Logger) {
        self.path = path
        self.logger = logger
        self.disk = disk
        held = Mutex(Self.isPresent(path, disk: disk, logger: logger))
    }

    /// Only a reserve file that is not there is no reserve (the next clean unmount makes one).
    /// One whose size cannot be read is counted as held, so a full disk still unlinks it.
    private static func isPresent(_ path: String, disk: any Disk, logger: Logger) -> Bool {
        do throws(CacheError) {
            _ = try disk.fileSize(path)
            return true
        } catch where error.errno == ENOENT {
            return false
        } catch {
            logger.warning("could not read the space reserve \(path), taken as present: \(error)")
            return true
        }
    }

    /// Frees the reserve because SQLite found the disk full; returns whether there was one.
    func releaseForFullDisk() -> Bool {
        let freed = release()
        if freed { logger.warning("store disk full: released the index's space reserve") }
        return freed
    }

    /// Frees the reserve as the mount's log headroom takes its place.
    func handOver() {
        _ = release()
    }

    /// Allocates the reserve again (at a clean unmount); on a full disk the store goes
    /// without until the next time.
    func restore() {
        held.withLock { held in
            guard !held else { return }
            held = allocate()
        }
    }

    private func release() -> Bool {
        held.withLock { held in
            guard held else { return false }
            do throws(CacheError) {
                try disk.unlink(path)
            } catch {
                logger.error("could not free the space reserve \(path): \(error)")
            }
            held = false
            return true
        }
    }

    /// On a full disk (or any failure) the store goes without a reserve until the next try.
    private func allocate() -> Bool {
        do throws(CacheError) {
            let fd = try disk.open(path, flags: O_WRONLY | O_CREAT, mode: 0o600)
            defer { disk.close(fd) }
            try disk.fallocate(fd, mode: 0, offset: 0, length: Tunables.reserveBytes)
            return true
        } catch {
            // A partial reserve is worth nothing: it goes. One that cannot go only takes its
            // space until the next try allocates over it.
            try? disk.unlink(path)
            return false
        }
    }
}
