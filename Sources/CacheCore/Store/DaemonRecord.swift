import CacheModel
import Glibc

/// What the daemon that holds a store is doing, so a new mount can tell a daemon that is
/// shutting down (worth waiting for) from a live one (an error at once). The `flock` on
/// `STORE/lock` says whether a daemon holds the store at all; this record says what it does.
///
/// The record is a file of its own, `STORE/daemon.state`, replaced whole by a rename: once
/// it was rewritten in place in `STORE/lock` (truncate, then write), and a new mount that
/// read between the two saw no record and took a flushing daemon for a live one (issue 28).
/// A reader now sees the old record or the new one, whole. No fsync: the record matters only
/// while a daemon holds the lock, and each daemon writes its own once it has the store.
public enum DaemonRecord {
    public enum State: Equatable, Sendable {
        case starting(pid: pid_t)
        case serving(pid: pid_t, mountpoint: String)
        case stopping(pid: pid_t)
    }

    /// One line: `starting PID`, `serving PID MOUNTPOINT` or `stopping PID`.
    public static func text(of state: State) -> String {
        switch state {
        case .starting(let pid): return "starting \(pid)\n"
        case .serving(let pid, let mountpoint): return "serving \(pid) \(mountpoint)\n"
        case .stopping(let pid): return "stopping \(pid)\n"
        }
    }

    /// The state a record's whole text says; nil for anything else (empty, cut short).
    public static func parse(_ text: String) -> State? {
        guard text.hasSuffix("\n") else { return nil }
        let words = text.dropLast().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard words.count >= 2, let pid = pid_t(words[1]), pid > 0 else { return nil }
        switch (words[0], words.count) {
        case ("starting", 2): return .starting(pid: pid)
        case ("serving", 3) where !words[2].isEmpty: return .serving(pid: pid, mountpoint: String(words[2]))
        case ("stopping", 2): return .stopping(pid: pid)
        default: return nil
        }
    }

    /// Records `state` for the store at `layout`; false if it could not be written. Only the
    /// daemon that holds the lock writes, so one temporary name is enough.
    @discardableResult
    public static func write(_ state: State, layout: StoreLayout, disk: any Disk = PosixDisk()) -> Bool {
        let temporary = layout.daemonRecordPath + ".new"
        let bytes = Array(text(of: state).utf8)
        do throws(CacheError) {
            let fd = try disk.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
            defer { disk.close(fd) }
            try disk.pwriteFully(fd, from: bytes, at: 0)
            try disk.rename(temporary, to: layout.daemonRecordPath)
            return true
        } catch {
            return false
        }
    }

    /// The recorded state; nil when there is no record or it says nothing known (a record
    /// that cannot be read says nothing known either: the caller then waits as for none).
    public static func read(layout: StoreLayout, disk: any Disk = PosixDisk()) -> State? {
        do throws(CacheError) {
            let fd = try disk.open(layout.daemonRecordPath, flags: O_RDONLY | O_CLOEXEC, mode: 0)
            defer { disk.close(fd) }
            // A record is one short line; more than a page is not one.
            let bytes = try disk.preadFully(fd, count: 4096, at: 0)
            return parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            return nil
        }
    }
}
