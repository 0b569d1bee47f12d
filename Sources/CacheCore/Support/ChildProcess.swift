import CLinux
import Glibc

/// A program the daemon runs with its standard output on a pipe (an `exec:` origin's), started
/// with `posix_spawn` rather than Foundation's `Process`.
///
/// *Why not `Process`:* on Linux its `run()` looks for the highest open descriptor by reading
/// `/proc/self/fd` and copies each entry's whole 256-byte `d_name`, past the end of short
/// records; when the last record ends just before an unmapped page the daemon dies of SIGSEGV
/// (swift-corelibs-foundation #5472, fixed after Swift 6.3). A daemon with many descriptors
/// open met it within a few hundred runs here (`scripts/bench --shared-tier`, 30 November).
///
/// The child gets standard input from `/dev/null`, standard output on the pipe, the daemon's
/// standard error (its log), no other descriptor (`closefrom(3)`: never `/dev/fuse`, the index
/// or a store file), every signal at its default action and none blocked (the daemon ignores
/// SIGPIPE; a program writing to a pipe nobody reads should die of it, as from a shell).
struct ChildProcess: ~Copyable {
    let pid: pid_t
    /// The read end of the child's standard output, owned (closed at deinit).
    let output: Int32
    private var reaped = false

    enum Failure: Error, Equatable, CustomStringConvertible {
        /// `pipe2` or `posix_spawn` failed with this errno (for example ENOENT, EACCES).
        case cannotStart(Int32)

        var description: String {
            switch self {
            case .cannotStart(let code): return String(cString: strerror(code))
            }
        }
    }

    /// How the child ended.
    enum Ending: Equatable {
        case exited(Int32)
        case killed(by: Int32)

        /// A shell's `$?`: the exit status, or 128 plus the signal.
        var status: Int32 {
            switch self {
            case .exited(let code): return code
            case .killed(let signal): return 128 + signal
            }
        }
    }

    init(program: String, arguments: [String]) throws(Failure) {
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else { throw .cannotStart(errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // dup2 clears close-on-exec on descriptor 1 only; both pipe ends close at exec.
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        var noSignal = sigset_t()
        sigemptyset(&noSignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setsigmask(&attributes, &noSignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, program, &actions, &attributes, argv, environ)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            throw .cannotStart(spawned)
        }
        pid = child
        output = ends[0]
    }

    /// Asks the child to stop (SIGTERM), as `Process.terminate()` did.
    func terminate() {
        kill(pid, SIGTERM)
    }

    /// Waits for the child to end. Call it once; the read end stays open until deinit.
    mutating func wait() -> Ending {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                // Never expected (the pid is this process's own child, reaped only here).
                reaped = true
                return .killed(by: SIGKILL)
            }
        }
        reaped = true
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .killed(by: signal)
    }

    deinit {
        close(output)
        // A child nobody waited for (an error path) is killed and reaped, never left a zombie.
        if !reaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }
}
