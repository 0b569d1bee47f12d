import CacheCore
import Foundation
import Glibc

/// Runs the daemon in the background and returns once it is serving, or with its error.
///
/// `cachefs mount` starts itself again with `--foreground` in a new session (setsid), with a
/// pipe on descriptor 3. The child writes "ready" there once the mount is up, then sends its
/// logs to STORE/daemon.log. Until then its errors reach the caller's terminal directly.
/// (fork() is unsafe in a multi-threaded Swift process, hence posix_spawn.)
enum Daemonizer {
    static let readyDescriptor: Int32 = 3
    static let readyEnvironment = "CACHEFS_READY_FD"
    /// glibc's POSIX_SPAWN_SETSID, which the Glibc module does not export.
    static let spawnSetsid: Int16 = 0x80

    /// `passphrase`: typed on this terminal, handed to the daemon on a pipe of its own
    /// (descriptor 4, see ``InheritedPassphrase``).
    static func spawnAndWaitUntilReady(passphrase: SecretBytes? = nil) throws -> Int32 {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw posixProblem("pipe") }
        var keyEnds: [Int32] = [-1, -1]
        if passphrase != nil {
            guard pipe(&keyEnds) == 0 else { throw posixProblem("pipe") }
            for end in keyEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        defer { for end in keyEnds where end >= 0 { close(end) } }
        // Only the dup2'd copy on descriptor 3 may reach the child, or EOF never comes.
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], readyDescriptor)
        if passphrase != nil { posix_spawn_file_actions_adddup2(&actions, keyEnds[0], InheritedPassphrase.descriptor) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, spawnSetsid)

        let executable = try CurrentExecutable.path()
        let arguments = [executable] + Array(CommandLine.arguments.dropFirst()) + ["--foreground"]
        var environment = ProcessInfo.processInfo.environment
        environment[readyEnvironment] = String(readyDescriptor)
        if passphrase != nil { environment[InheritedPassphrase.environmentName] = String(InheritedPassphrase.descriptor) }
        let cArguments = arguments.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, cArguments, cEnvironment)
        close(pipeEnds[1])
        if let passphrase {
            // Far below a pipe's buffer: the write never waits for the daemon to read. Both
            // ends close now, so the daemon reads to the end before the mount is ready.
            if spawned == 0 {
                passphrase.withUnsafeBytes { bytes in _ = write(keyEnds[1], bytes.baseAddress, bytes.count) }
            }
            for end in keyEnds { close(end) }
            keyEnds = [-1, -1]
        }
        guard spawned == 0 else {
            close(pipeEnds[0])
            throw posixProblem("spawn the daemon", code: spawned)
        }
        let handle = FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true)
        let message = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        if message.hasPrefix("ready") {
            // systemd only hears the process it started: name the daemon as the service's main process.
            if let failure = ServiceNotification.send("READY=1\nMAINPID=\(child)") { printError("cachefs: warning: \(failure)") }
            return 0
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        let code = exited ? (status >> 8) & 0xff : 1
        return code == 0 ? 1 : code
    }

    /// Whether a `cachefs mount` waits for this daemon to be ready (and then its log moves to
    /// the store's file).
    static var hasWaitingParent: Bool {
        ProcessInfo.processInfo.environment[readyEnvironment] != nil
    }

    /// Called by the daemon once the mount is serving: tells the waiting parent and moves
    /// the daemon's output to the store's log, so no terminal or pipe is held open. Returns
    /// whether there was a parent to tell (which then tells systemd too).
    @discardableResult
    static func reportReady(logPath: String) -> Bool {
        guard let text = ProcessInfo.processInfo.environment[readyEnvironment], let fd = Int32(text) else { return false }
        _ = "ready\n".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        DaemonLog.shared.moveToFile(logPath)
        return true
    }

    private static func posixProblem(_ what: String, code: Int32 = errno) -> MountPreflight.Problem {
        MountPreflight.Problem(description: "cannot \(what): \(String(cString: strerror(code)))")
    }
}
