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
    public static func write(_ state: State, layout: StoreLayout) -> Bool {
        let temporary = layout.daemonRecordPath + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let text = text(of: state)
        let written = text.withCString { Glibc.write(fd, $0, strlen($0)) } == text.utf8.count
        close(fd)
        return written && rename(temporary, layout.daemonRecordPath) == 0
    }

    /// The recorded state; nil when there is no record or it says nothing known.
    public static func read(layout: StoreLayout) -> State? {
        let fd = open(layout.daemonRecordPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return parse(String(decoding: bytes, as: UTF8.self))
    }
}
