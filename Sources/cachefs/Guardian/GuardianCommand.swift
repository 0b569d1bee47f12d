import ArgumentParser
import CacheModel
import CLinux
import Foundation
import Glibc

/// `cachefs connection-guardian`: started by the daemon (``GuardianLauncher``), not by users.
/// Waits for the daemon's main thread to end, then, if the mount's FUSE connection still
/// exists, aborts it: every request waiting for the daemon answers ECONNABORTED at once (and
/// every later one ENOTCONN), the daemon's threads leave the kernel, and the dying daemon can
/// finish dying.
///
/// It cannot hang: it waits for one signal only, which the kernel sends when the daemon's
/// main thread exits, however it exits (SIGKILL, a crash, the OOM killer, a clean return);
/// then it makes two system calls on descriptors that name that one connection, and exits.
struct GuardianCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: GuardianLauncher.commandName,
        abstract: "Aborts a mount's FUSE connection when its daemon dies (the daemon starts it).",
        shouldDisplay: false)

    @Option(help: "The daemon's process id.")
    var daemon: Int32

    @Option(help: "The connection's name in fusectl (for the log line).")
    var connection: String

    @Option(help: "The daemon's log file (else standard error).")
    var log: String?

    func run() throws {
        // Never keep a directory busy, so an unmount elsewhere is not refused for it.
        _ = chdir("/")
        let files = FuseControl.Connection(name: connection, abort: GuardianLauncher.abortDescriptor,
                                           waiting: GuardianLauncher.waitingDescriptor)
        guard cachefs_set_parent_death_signal(GuardianLauncher.deathSignal) == 0 else {
            report("cannot ask for the daemon's death signal: \(String(cString: strerror(errno))); "
                   + "if the daemon is killed, processes using its mount may wait until connection \(connection) is aborted by hand")
            throw ExitCode.failure
        }
        // The daemon may have died before the line above, and then no signal comes.
        if daemonMainThreadRuns() {
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, GuardianLauncher.deathSignal)
            var received: Int32 = 0
            while sigwait(&signals, &received) != 0 {}
        }
        // No connection left: the daemon unmounted before it ended (a clean exit).
        guard let waiting = FuseControl.waitingRequests(files) else { return }
        FuseControl.abort(files)
        report("the daemon (pid \(daemon)) died with its mount connected; aborted FUSE connection \(connection): "
               + "the \(waiting) requests waiting answered ECONNABORTED, later ones ENOTCONN. "
               + "Mount again to recover the store.")
    }

    /// Whether the daemon's main thread still runs: this process is still its child (else the
    /// whole daemon is gone), and the thread is not a zombie (exited, other threads left).
    private func daemonMainThreadRuns() -> Bool {
        guard getppid() == daemon,
              let stat = try? String(contentsOfFile: "/proc/\(daemon)/task/\(daemon)/stat", encoding: .utf8),
              let nameEnd = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: nameEnd)...].first { $0 != " " }
        return state != "Z" && state != "X"
    }

    private func report(_ message: String) {
        let line = "\(ValueParsing.formatRFC3339(SystemClock().now())) error cachefs-guardian: \(message)\n"
        let fd = log.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600) } ?? 2
        _ = line.withCString { write(fd >= 0 ? fd : 2, $0, strlen($0)) }
        if fd > 2 { close(fd) }
    }
}
