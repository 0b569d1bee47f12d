import CacheCore
import Foundation
import Glibc

/// What the daemon that holds a store is doing, written into `STORE/lock` (whose `flock`
/// says whether a daemon holds the store at all), so a new mount can tell a daemon that is
/// shutting down (worth waiting for) from a live one (an error at once).
enum DaemonRecord {
    enum State {
        case starting
        case serving(mountpoint: String)
        case stopping
    }

    static func write(_ state: State, store: String) {
        let text: String
        switch state {
        case .starting: text = "starting \(getpid())\n"
        case .serving(let mountpoint): text = "serving \(getpid()) \(mountpoint)\n"
        case .stopping: text = "stopping \(getpid())\n"
        }
        let fd = open(StoreLayout(root: store).lockPath, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    /// Waits (up to `Tunables.handOverSeconds`) while the store's daemon is shutting down: it wrote
    /// `stopping`, or it serves a mountpoint that is no longer mounted (`fusermount3 -u`
    /// came, its loop has not ended yet). Returns at once when no daemon holds the store,
    /// or when the one that does is alive: opening the store then says so.
    static func waitForStoppingDaemon(store: String) {
        let path = StoreLayout(root: store).lockPath
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let deadline = Date().addingTimeInterval(Tunables.handOverSeconds)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK, isStopping(recordText(path)), Date() < deadline else { return }
            usleep(Tunables.handOverPollMicroseconds)
        }
        flock(fd, LOCK_UN)
    }

    private static func isStopping(_ text: String) -> Bool {
        let words = text.split(separator: " ", maxSplits: 2).map { $0.trimmingCharacters(in: .newlines) }
        switch words.first {
        case "stopping": return true
        case "serving":
            guard words.count == 3 else { return false }
            return MountTable.current().entry(at: words[2])?.type != "fuse.cachefs"
        default: return false
        }
    }

    private static func recordText(_ path: String) -> String {
        // No lock file yet (or gone): no daemon is recorded, which is what empty text means.
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}
