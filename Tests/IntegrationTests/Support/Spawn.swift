import Foundation
import Glibc

/// A child process started with posix_spawn and reaped with waitpid on its own pid.
/// (Foundation's Process was seen to miss a child's exit when many run in parallel, which
/// hung a test; this keeps the tests' process handling small and predictable.)
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `arguments` (the first is looked up on PATH) with the given descriptors as
    /// standard input, output and error.
    init(_ arguments: [String], stdin: Int32, stdout: Int32, stderr: Int32, environment: [String: String] = [:]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // The test runner blocks most signals in its threads; a child must start clean,
        // or `kill` from a test script would not stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = arguments.map { strdup($0) } + [nil]
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let cEnvironment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, arguments[0], &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else {
            throw MountError(message: "cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        pid = child
    }

    /// Whether the child still runs; reaps it (once) when it has ended.
    var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid {
            exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            return false
        }
        return result == 0
    }

    /// Waits for the end and returns the exit status (128 + signal when killed).
    @discardableResult
    func wait() -> Int32 {
        while isRunning { usleep(2000) }
        return terminationStatus
    }

    var terminationStatus: Int32 {
        lock.lock()
        defer { lock.unlock() }
        return exitStatus ?? -1
    }

    func signal(_ number: Int32) {
        kill(pid, number)
    }
}

/// A temporary file that collects a child's output, read back whole.
struct OutputFile {
    let path: String
    let fd: Int32

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-out-\(UUID().uuidString)").path
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    }

    func contents() -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    func remove() {
        close(fd)
        unlink(path)
    }
}
