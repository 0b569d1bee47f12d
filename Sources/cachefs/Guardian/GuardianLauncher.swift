import CLinux
import Foundation
import Glibc

/// Starts the daemon's connection guardian: a small process that aborts the mount's FUSE
/// connection the moment the daemon's main thread is gone (see ``GuardianCommand``).
///
/// Why a second process: the kernel ends a connection when the last descriptor of
/// `/dev/fuse` closes, and a dying process closes its descriptors only once every thread has
/// left the kernel. A thread sending a notification (`notify_delete`) can wait there for a
/// directory lock that a LOOKUP holds while it waits for the daemon's answer: the daemon
/// never answers, the lock is never released, the process never finishes dying, and every
/// process that touches the mount waits forever. The guardian breaks that cycle from outside.
enum GuardianLauncher {
    static let commandName = "connection-guardian"
    /// Where the guardian finds the connection's `abort` and `waiting` files.
    static let abortDescriptor: Int32 = 3
    static let waitingDescriptor: Int32 = 4
    /// The kernel sends it to the guardian when the thread that started it exits.
    static let deathSignal = SIGUSR1

    /// Starts the guardian of the mount at `mountpoint`. Call it on the daemon's main thread,
    /// which only waits for the loop and never enters the filesystem, so it ends exactly when
    /// the daemon does. `logPath`: the daemon's log file, when the daemon writes one.
    static func start(mountpoint: String, logPath: String?) throws {
        precondition(Thread.isMainThread, "the guardian hears of the death of the thread that starts it")
        let connection = try FuseControl.open(mountpoint: mountpoint)
        defer { connection.close() }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if logPath != nil {
            // Until the daemon is ready, its output is its caller's terminal or pipe: the
            // guardian must not hold that open, or a caller reading to the end would wait.
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, connection.abort, abortDescriptor)
        posix_spawn_file_actions_adddup2(&actions, connection.waiting, waitingDescriptor)
        // Nothing else of the daemon's: above all not /dev/fuse, which would keep the
        // connection alive as long as the guardian lives.
        posix_spawn_file_actions_addclosefrom_np(&actions, waitingDescriptor + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Blocked from its first instruction (and in every thread it may start), so the death
        // signal waits for `sigwait` and a SIGTERM, SIGINT or SIGHUP sent to every cachefs
        // process, or to the daemon's session, does not end the guardian before the daemon.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in [deathSignal, SIGTERM, SIGINT, SIGHUP] { sigaddset(&blocked, signal) }
        posix_spawnattr_setsigmask(&attributes, &blocked)
        // A session of its own: a kill of the daemon's process group leaves the guardian.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK) | Daemonizer.spawnSetsid)

        let executable = try CurrentExecutable.path()
        var arguments = [executable, commandName, "--daemon", String(getpid()), "--connection", connection.name]
        if let logPath { arguments += ["--log", logPath] }
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, cArguments, environ)
        guard spawned == 0 else {
            throw FuseControl.Problem(description: "cannot start the connection guardian: \(String(cString: strerror(spawned)))")
        }
    }
}
