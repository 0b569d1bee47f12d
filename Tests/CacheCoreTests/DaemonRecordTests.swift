import CacheCore
import Foundation
import Glibc
import Synchronization
import Testing

/// The record a new mount reads to tell a daemon that is flushing after its unmount from a
/// live one (issue 28: a read between two writes took a flushing daemon for a live one).
@Suite struct DaemonRecordTests {
    private static let states: [DaemonRecord.State] = [
        .starting(pid: 4_101),
        .serving(pid: 4_101, mountpoint: "/srv/cache with a space/" + String(repeating: "m", count: 300)),
        .stopping(pid: 4_101),
        .starting(pid: 77),
        .serving(pid: 77, mountpoint: "/m"),
        .stopping(pid: 77),
    ]

    @Test func eachStateReadsBackAsWritten() throws {
        let store = try TestStore()
        let layout = StoreLayout(root: store.path)
        let lock = try StoreLock(layout: layout)
        defer { withExtendedLifetime(lock) {} }
        #expect(DaemonRecord.read(layout: layout) == nil)
        for state in Self.states {
            #expect(DaemonRecord.write(state, layout: layout))
            #expect(DaemonRecord.read(layout: layout) == state)
        }
    }

    @Test func anythingButAWholeRecordSaysNothing() {
        for text in ["", "stopping", "stopping 12", "stopping 12 /m\n", "serving 12\n", "serving 12 \n", "starting x\n",
                     "starting 0\n", "started 12\n", String(DaemonRecord.text(of: .serving(pid: 9, mountpoint: "/m")).dropLast())] {
            #expect(DaemonRecord.parse(text) == nil, "\(text.debugDescription)")
        }
        for state in Self.states {
            #expect(DaemonRecord.parse(DaemonRecord.text(of: state)) == state)
        }
    }

    /// Reader processes (and a thread of this one) read the record in a tight loop while the
    /// lock holder rewrites it: every read is one of the states written, whole.
    @Test func aRecordReadWhileItIsRewrittenIsAlwaysAWholeState() throws {
        let store = try TestStore()
        let layout = StoreLayout(root: store.path)
        let lock = try StoreLock(layout: layout)
        defer { withExtendedLifetime(lock) {} }
        #expect(DaemonRecord.write(Self.states[0], layout: layout))

        let readers = try (0..<3).map { number in
            try ReaderProcess(record: layout.daemonRecordPath, output: store.path + "/reads-\(number)")
        }
        defer { readers.forEach { $0.stop() } }
        let inProcess = InProcessReader(layout: layout, states: Self.states)
        defer { inProcess.finish() }

        // Each reader must have read a while during the writes: 200 kB, some 3,000 reads.
        #expect(Shell.waitUntil(seconds: 10) { readers.allSatisfy { $0.outputSize > 0 } }, "the readers did not start")
        let targets = readers.map { $0.outputSize + 200_000 }
        var writes = 0
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !zip(readers, targets).allSatisfy({ $0.outputSize >= $1 }) {
            for state in Self.states {
                #expect(DaemonRecord.write(state, layout: layout))
            }
            writes += Self.states.count
        }
        readers.forEach { $0.stop() }
        let (inProcessReads, inProcessBad) = inProcess.finish()
        #expect(zip(readers, targets).allSatisfy { $0.outputSize >= $1 }, "the readers read too little in 20 s")

        let wholeTexts = Set(Self.states.map(DaemonRecord.text(of:)))
        for reader in readers {
            let reads = try reader.reads()
            let bad = reads.filter { !wholeTexts.contains($0) }
            #expect(bad.count == 0, "of \(reads.count) reads, some were not a whole record: \(bad.prefix(5).map(\.debugDescription))")
        }
        #expect(inProcessBad.isEmpty, "of \(inProcessReads) reads in this process, some said \(inProcessBad)")
        #expect(inProcessReads > 0 && writes > 0)
    }
}

/// A thread of this process reading the record with ``DaemonRecord/read(layout:)`` until
/// `finish`; it counts its reads and keeps the first few that were no state written.
private final class InProcessReader: Sendable {
    private let done = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let reads = Mutex((count: 0, bad: [String]()))

    init(layout: StoreLayout, states: [DaemonRecord.State]) {
        Thread { [self] in
            while !done.load(ordering: .acquiring) {
                let state = DaemonRecord.read(layout: layout)
                reads.withLock { reads in
                    reads.count += 1
                    if state.map(states.contains) != true, reads.bad.count < 5 { reads.bad.append(String(describing: state)) }
                }
            }
            finished.store(true, ordering: .releasing)
        }.start()
    }

    /// Stops the thread (waiting for it) and returns its count and its bad reads.
    @discardableResult
    func finish() -> (count: Int, bad: [String]) {
        done.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) { usleep(1_000) }
        return reads.withLock { $0 }
    }
}

/// `bash` reading a file over and over (its builtin `read`: one open and read, no fork),
/// each text it read ended by a NUL in `output`.
private final class ReaderProcess {
    let output: String
    private let pid: pid_t
    private var reaped = false

    init(record: String, output: String) throws {
        self.output = output
        let script = #"while :; do text=; IFS= read -r -d '' text < "$1"; printf '%s\0' "$text"; done"#
        let outputFD = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer {
            close(outputFD)
            close(quiet)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, quiet, 0)
        posix_spawn_file_actions_adddup2(&actions, outputFD, 1)
        posix_spawn_file_actions_adddup2(&actions, quiet, 2)
        let words: [String] = ["bash", "-c", script, "reader", record]
        let arguments = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawnp(&child, "bash", &actions, nil, arguments, environ)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        pid = child
    }

    var outputSize: Int {
        var info = stat()
        return stat(output, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Every whole read; the text after the last NUL is one the reader was killed writing.
    func reads() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        return data.split(separator: 0, omittingEmptySubsequences: false).dropLast()
            .map { String(decoding: $0, as: UTF8.self) }
    }

    func stop() {
        guard !reaped else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
    }
}
