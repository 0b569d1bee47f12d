import Glibc
import Logging
import Synchronization

/// A few megabytes held in `STORE/reserve` so the index can always commit, even on a full
/// disk. Removing a cached file needs an index commit first; without the reserve a full disk
/// could not free itself. The index releases it when SQLite reports the disk full, and the
/// evictor takes it back once there is room again.
final class SpaceReserve: Sendable {
    static let size: Int64 = 8 << 20

    private let path: String
    private let logger: Logger
    private let held = Mutex(false)

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        held.withLock { $0 = Self.allocate(path) }
    }

    var isHeld: Bool { held.withLock { $0 } }

    /// Given up for a full disk and not yet taken back: its space is the index's.
    var isReleased: Bool { released.withLock { $0 } }
    private let released = Mutex(false)

    /// Frees the reserve; returns whether there was one to free.
    func release() -> Bool {
        held.withLock { held in
            guard held else { return false }
            unlink(path)
            held = false
            released.withLock { $0 = true }
            logger.warning("store disk full: released the index's space reserve")
            return true
        }
    }

    /// Takes the reserve back if it is not held (call when free space allows).
    func restore() {
        held.withLock { held in
            guard !held else { return }
            held = Self.allocate(path)
            if held { released.withLock { $0 = false } }
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
