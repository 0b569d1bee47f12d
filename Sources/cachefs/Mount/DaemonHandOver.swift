import CacheCore
import CacheModel
import Foundation
import Glibc

/// A new mount of a store whose daemon is still flushing after its unmount waits for it
/// (``DaemonRecord`` says what that daemon does).
enum DaemonHandOver {
    /// Waits (up to `Tunables.handOverSeconds`) while the store's daemon is shutting down: it wrote
    /// `stopping`, or it serves a mountpoint that is no longer mounted (`fusermount3 -u`
    /// came, its loop has not ended yet). Returns at once when no daemon holds the store,
    /// or when the one that does is alive (`starting`, or `serving` a mounted mountpoint):
    /// opening the store then says so.
    ///
    /// No record (or one that says nothing known) while the lock is held is a moment of a
    /// hand-over, not a live daemon: a store's first daemon has the lock and has not written
    /// `starting` yet. It is looked at again shortly, as `stopping` is; so is a `stopping`
    /// that the last daemon left while the next one starts, until that one writes `starting`.
    static func waitForStoppingDaemon(store: String) {
        let layout = StoreLayout(root: store)
        let fd = open(layout.lockPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let deadline = Date().addingTimeInterval(Tunables.handOverSeconds)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK, !isAlive(DaemonRecord.read(layout: layout)), Date() < deadline else { return }
            usleep(Tunables.handOverPollMicroseconds)
        }
        flock(fd, LOCK_UN)
    }

    private static func isAlive(_ state: DaemonRecord.State?) -> Bool {
        switch state {
        case .starting: return true
        case .serving(_, let mountpoint): return MountTable.current().entry(at: mountpoint)?.type == "fuse.cachefs"
        case .stopping, nil: return false
        }
    }
}
