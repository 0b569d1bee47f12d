import Glibc
import Logging
import Synchronization

/// Eight megabytes held in `STORE/reserve` while the store is not mounted, so that a mount
/// on a full disk can still commit its recovery and settings. While mounted the headroom
/// lives past the end of the index's log instead (``LogHeadroom``), where data writes
/// cannot take it: the mount hands the reserve over once its writer runs, and a clean
/// unmount takes it back after the log is truncated.
final class SpaceReserve: Sendable {
    static let size: Int64 = 8 << 20

    private let path: String
    private let logger: Logger
    private let held: Mutex<Bool>

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        held = Mutex(access(path, F_OK) == 0)
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
            held = Self.allocate(path)
        }
    }

    private func release() -> Bool {
        held.withLock { held in
            guard held else { return false }
            unlink(path)
            held = false
            return true
        }
    }

    private static func allocate(_ path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if posix_fallocate(fd, 0, off_t(size)) == 0 { return true }
        unlink(path)
        return false
    }
}
