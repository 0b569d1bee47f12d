@testable import CacheCore
import Glibc
import Testing

/// The `exec:` origin's programs run as a ``ChildProcess`` (posix_spawn), which replaced
/// Foundation's `Process` after it crashed the daemon: what the program gets and how it ends.
@Suite struct ChildProcessTests {
    /// Runs `script` with `sh -c` and returns its standard output and how it ended.
    private func run(_ script: String, stopAfterFirstChunk: Bool = false) throws -> (output: String, ending: ChildProcess.Ending) {
        var child = try ChildProcess(program: "/bin/sh", arguments: ["-c", script])
        var output: [UInt8] = []
        _ = DescriptorStream.deliver(child.output, chunkSize: 4096) { chunk in
            output.append(contentsOf: chunk)
            return !stopAfterFirstChunk
        }
        if stopAfterFirstChunk { child.terminate() }
        return (String(decoding: output, as: UTF8.self), child.wait())
    }

    @Test func theProgramsOutputAndExitStatusComeBack() throws {
        let result = try run("printf 'hello\\nworld'; exit 44")
        #expect(result.output == "hello\nworld")
        #expect(result.ending == .exited(44))
        #expect(result.ending.status == 44)
    }

    /// No descriptor of the daemon (`/dev/fuse`, the index, a store file) reaches the program:
    /// one opened here without close-on-exec would otherwise show in its /proc/self/fd.
    @Test func theProgramGetsOnlyStandardInputOutputAndError() throws {
        let inherited = open("/dev/null", O_RDONLY)
        #expect(inherited > 2)
        defer { close(inherited) }
        // ls lists the shell's descriptors (a glob in the shell itself would open one more).
        let result = try run("ls /proc/$$/fd")
        #expect(result.output.split(separator: "\n").sorted() == ["0", "1", "2"], "descriptors of the program: \(result.output)")
        let input = try run("readlink /proc/$$/fd/0")
        #expect(input.output == "/dev/null\n")
    }

    /// The daemon ignores SIGPIPE (and its threads may block signals); the program starts with
    /// every signal at its default and none blocked, as from a shell. (glibc's posix_spawn
    /// leaves its own two internal signals, 32 and 33, ignored: no program uses them. `exec`:
    /// the shell blocks every signal for a moment whenever it starts a command.)
    @Test func theProgramStartsWithNoSignalIgnoredOrBlocked() throws {
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let result = try run("exec grep -E '^Sig(Ign|Blk):' /proc/self/status")
        let masks = Dictionary(uniqueKeysWithValues: result.output.split(separator: "\n").compactMap { line -> (String, UInt64)? in
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let mask = UInt64(fields[1], radix: 16) else { return nil }
            return (String(fields[0]), mask)
        })
        #expect(masks["SigBlk:"] == 0, "\(result.output)")
        let ignoredStandardSignals = masks["SigIgn:"].map { $0 & 0x7FFF_FFFF }
        #expect(ignoredStandardSignals == 0, "\(result.output)")
    }

    @Test func aFetchNoLongerWantedStopsTheProgram() throws {
        let result = try run("while :; do echo more; done", stopAfterFirstChunk: true)
        #expect(result.output.hasPrefix("more\n"))
        #expect(result.ending == .killed(by: SIGTERM))
        #expect(result.ending.status == 128 + SIGTERM)
    }

    @Test func aProgramThatCannotStartIsAnErrorWithItsReason() {
        #expect(throws: ChildProcess.Failure.cannotStart(ENOENT)) {
            _ = try ChildProcess(program: "/nonexistent/origin-program", arguments: [])
        }
    }

    /// An error path that never waits still leaves no zombie and no running program.
    @Test func aChildNobodyWaitedForIsKilledAndReaped() throws {
        var pid: pid_t = 0
        do {
            let child = try ChildProcess(program: "/bin/sleep", arguments: ["30"])
            pid = child.pid
            #expect(kill(pid, 0) == 0)
        }
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }
}
