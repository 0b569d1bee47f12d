import Foundation
import Glibc
import Testing

/// Issue 45: with `-o kernel_hits` the kernel serves a cached file's open, read and close by
/// itself. What the daemon must still do without those requests: count every hit, keep an
/// evicted file's bytes for the process that has it open, and never let the kernel serve an
/// expired file.
@Suite struct KernelHitsTests {
    /// The requests the daemon received, by operation, read from its metrics file at unmount.
    private static func requestsOfARun(hits: Int, kind: StoreKind) throws -> (requests: [String: Double], hitsCounted: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-kh-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/cachefs.prom"
        var hitsCounted = ""
        try withMountedStore(arguments: ["-o", "kernel_hits,metrics_file=\(file),metrics_interval=60"], kind: kind) { mount in
            _ = try mount.mustSucceed("head -c 1024 /dev/urandom > data/hit && cat data/hit > /dev/null")
            _ = try mount.mustSucceed("for i in $(seq \(hits)); do cat data/hit > /dev/null; done")
            // Counted from the kernel's close events, which the daemon reads a moment later.
            _ = try Shell.waitUntil(seconds: 2) { try mount.xattr("data", "user.cache.hits") == "\(hits + 1)" }
            hitsCounted = try mount.xattr("data", "user.cache.hits")
            #expect(try mount.unmount() == 0)
        }
        var requests: [String: Double] = [:]
        for (key, value) in MetricsTests.parse(try String(contentsOfFile: file, encoding: .utf8))
        where key.hasPrefix("cachefs_request_duration_seconds_count{op=\"") {
            requests[String(key.dropFirst("cachefs_request_duration_seconds_count{op=\"".count).dropLast(2))] = value
        }
        return (requests, hitsCounted)
    }

    /// The same run with 1 and with 41 hits: the 40 more hits cost the daemon no request at
    /// all, and each of them is counted.
    @Test(arguments: StoreKind.allCases)
    func aHitSendsTheDaemonNoRequestAndIsCounted(kind: StoreKind) throws {
        let one = try Self.requestsOfARun(hits: 1, kind: kind)
        let many = try Self.requestsOfARun(hits: 41, kind: kind)
        #expect(one.hitsCounted == "2" && many.hitsCounted == "42", "hits counted: \(one.hitsCounted), \(many.hitsCounted)")
        // Requests for pool figures (getxattr) vary with how soon the events were read.
        // The first read moves the file's atime (relatime), and the kernel learns it when that
        // read's close event is read: the next stat asks once, whenever that is (in either run).
        let fileRequests = ["lookup": 0.0, "getattr": 1, "open": 0, "read": 0, "flush": 0, "release": 0, "forget": 0,
                            "create": 0, "write": 0]
        for (operation, slack) in fileRequests {
            let difference = many.requests[operation, default: 0] - one.requests[operation, default: 0]
            #expect(abs(difference) <= slack,
                    "\(operation): \(one.requests[operation, default: 0]) requests for 1 hit, \(many.requests[operation, default: 0]) for 41")
        }
        #expect(many.requests["open", default: 0] <= 1, "the connection's one OPEN, declined: \(many.requests)")
    }

    /// A shared `mmap` write: the kernel writes the mapping's dirty pages (WRITE with no
    /// handle) before the close event of the file's last reference, so the write is finished
    /// by its own close and a crash after it keeps the bytes, as ext4 has them.
    @Test func anMmapWriteIsWholeAfterACrash() throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"]) { mount in
            let script = """
                import mmap, os, sys
                with open(sys.argv[1], "wb") as f: f.write(b"-" * 8192)
                fd = os.open(sys.argv[1], os.O_RDWR)
                m = mmap.mmap(fd, 8192)
                m[100:105] = b"hello"
                m[5000:5005] = b"world"
                m.close()
                os.close(fd)
                """
            let ext4 = mount.directory + "/mmap-ext4"
            let onExt4 = try Shell.run(["python3", "-c", script, ext4])
            let onMount = try Shell.run(["python3", "-c", script, mount.path("data/mapped")])
            #expect(onExt4.succeeded && onMount.succeeded, "\(onExt4.error) | \(onMount.error)")
            let expected = try Shell.bash("sha256sum < '\(ext4)'").output
            #expect(try Shell.bash("sha256sum < '\(mount.path("data/mapped"))'").output == expected)
            // A pool setting commits after every change queued before it.
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 4 data")
            try mount.crash()
            try mount.mount()
            #expect(try Shell.bash("sha256sum < '\(mount.path("data/mapped"))'").output == expected)
        }
    }

    /// A file evicted while a process has it open: gone from the mount at once, its bytes
    /// still read by that process (from the daemon, the page cache dropped), and removed from
    /// the disk when the process closes it.
    @Test(arguments: StoreKind.allCases)
    func anEvictedFileKeepsItsBytesUntilItsReaderCloses(kind: StoreKind) throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"], kind: kind) { mount in
            _ = try mount.mustSucceed("head -c 3000000 /dev/urandom > data/f")
            let sum = try mount.mustSucceed("sha256sum < data/f")
            let reader = try OpenReader(of: mount.path("data/f"))
            defer { reader.close() }
            let held = reader.descriptorPath
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            #expect(try mount.sh("ls data/f").succeeded == false, "an evicted file is still listed")
            #expect(try mount.objectFileCount() == 1, "the open file's bytes went")
            // The kernel's cached pages go: the read below reaches the daemon.
            _ = try Shell.bash("echo 1 > /proc/sys/vm/drop_caches")
            #expect(try Shell.bash("sha256sum < \(held)").output.trimmingCharacters(in: .whitespacesAndNewlines) == sum)
            reader.close()
            #expect(try mount.objectFilesLeft(waitingUpTo: 5) == 0, "the closed file's bytes stayed")
        }
    }

    /// The kernel asks again at the file's expiry (entry and attribute timeouts no longer than
    /// its time left): an expired file is never served from the kernel's cache.
    @Test func anExpiredFileIsNotServedFromTheKernelsCache() throws {
        try withMountedStore(arguments: ["--pool", "data=0,2s", "-o", "kernel_hits"]) { mount in
            // Counted from the write: reads would otherwise keep it young (age_basis access).
            _ = try mount.mustSucceed("setfattr -n user.cache.age_basis -v modification data")
            _ = try mount.mustSucceed("echo old > data/f && cat data/f > /dev/null")
            let written = Date()
            var lastServed = written
            while Date().timeIntervalSince(written) < 4 {
                let read = try mount.sh("cat data/f")
                if read.succeeded { lastServed = Date() }
                usleep(50_000)
            }
            // The age limit plus the kernel timeouts' rounding (Tunables.expiredEntrySeconds).
            #expect(lastServed.timeIntervalSince(written) < 3.1, "served \(lastServed.timeIntervalSince(written)) s after its write")
            #expect(try mount.sh("cat data/f").succeeded == false)
        }
    }

    /// Writes, appends, O_TRUNC and truncate(1) through a kernel that opens files by itself
    /// answer as on the store's own disk.
    @Test(arguments: StoreKind.allCases)
    func writesAndTruncationsAnswerAsExt4Does(kind: StoreKind) throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"], kind: kind) { mount in
            let ext4 = mount.directory + "/ext4-kh"
            try FileManager.default.createDirectory(atPath: ext4, withIntermediateDirectories: false)
            let script = """
                echo first > f; cat f
                echo second >> f; cat f
                echo third > f; cat f
                head -c 100000 /dev/zero | tr '\\0' a > g; truncate -s 10 g; cat g; echo
                truncate -s 20000 g; wc -c < g; sha256sum < g
                printf 'xy' | dd of=g bs=1 seek=5 conv=notrunc status=none; head -c 12 g; echo
                exec 4<> h; echo opened >&4; exec 4>&-; cat h
                cp g copy; cmp g copy && echo same
                """
            let onExt4 = try Shell.bash("cd '\(ext4)' && \(script)")
            let onMount = try mount.sh("cd data && \(script)")
            #expect(onExt4.succeeded && onMount.succeeded, "\(onExt4.error) | \(onMount.error)")
            #expect(onMount.output == onExt4.output)
            // Closed writes are finished: a remount finds every file whole.
            #expect(try mount.unmount() == 0)
            try mount.mount()
            #expect(try mount.sh("cd data && cat f h && sha256sum < g").output
                        == Shell.bash("cd '\(ext4)' && cat f h && sha256sum < g").output)
        }
    }

    /// A fetched file: its first READ fetches it (no OPEN does), later reads are hits served
    /// by the kernel, and past its pool's `revalidate` the kernel looks the name up again,
    /// which asks the origin: a change is seen, while a reader that has the old version open
    /// keeps reading it whole.
    @Test(arguments: StoreKind.allCases)
    func aFetchedFileIsFetchedAtItsFirstReadAndRevalidatedAtItsLookup(kind: StoreKind) throws {
        try withOriginMount("file", arguments: ["-o", "kernel_hits"], kind: kind, prepare: { origin in
            try "version one\n".write(toFile: origin.files + "/a.txt", atomically: false, encoding: .utf8)
        }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 1 data")
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            // The first read was the fetch's (a miss), the second a hit.
            let hits = try mount.xattr("data", "user.cache.hits")
            #expect(hits == "1", "hits: \(hits)")
            let reader = try OpenReader(of: mount.path("data/a.txt"))
            defer { reader.close() }
            let held = reader.descriptorPath
            _ = try mount.mustSucceed("printf 'version two, longer\\n' > '\(origin.files)/a.txt'")
            // Within `revalidate` the copy is trusted, by the kernel too.
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            let changed = try Shell.waitUntil(seconds: 4) {
                try mount.mustSucceed("cat data/a.txt") == "version two, longer"
            }
            #expect(changed, "the change was not seen past revalidate")
            #expect(try Shell.bash("cat \(held)").output == "version one\n")
            #expect(try mount.xattr("data", "user.cache.revalidations") != "0")
        }
    }

    /// Past the kernel's queue of events (`max_queued_events`): hits made while the daemon
    /// could not read them (stopped) are counted up to the queue's size, the overflow is
    /// logged, and hits after it count again.
    @Test func aQueueOverflowLosesSomeHitsAndIsLoggedAndCountingGoesOn() throws {
        let queued = Int(try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16384
        try withMountedStore(arguments: ["-o", "kernel_hits"]) { mount in
            _ = try mount.mustSucceed("echo x > data/f && cat data/f > /dev/null")
            // Until the kernel holds the file's attributes after its read moved atime, so the
            // opens below need no GETATTR of the stopped daemon.
            let settled = try Shell.waitUntil(seconds: 5) {
                let times = try mount.mustSucceed("stat -c '%x|%y' data/f").split(separator: "|")
                return times.count == 2 && times[0] > times[1]
            }
            #expect(settled, "the read did not move atime")
            let pid = try #require(mount.daemon?.pid)
            // An open and a close each are an event: twice the queue's size is lost in part.
            // They need no request, so they run while the daemon is stopped. (Plain open(2):
            // Python's open() asks isatty(), an ioctl, which is a request.)
            kill(pid, SIGSTOP)
            let opened: CommandResult
            do {
                defer { kill(pid, SIGCONT) }
                opened = try Shell.run(["timeout", "60", "python3", "-c", """
                    import os, sys
                    for _ in range(\(queued)): os.close(os.open(sys.argv[1], os.O_RDONLY))
                    """, mount.path("data/f")])
            }
            #expect(opened.succeeded, "\(opened.error)")
            let warned = Shell.waitUntil(seconds: 5) { mount.daemonLog.contains("event queue overflowed") }
            #expect(warned, "no overflow logged: \(mount.daemonLog)")
            let afterOverflow = Int(try mount.xattr("data", "user.cache.hits")) ?? -1
            #expect(afterOverflow > 1 && afterOverflow < queued + 1, "hits \(afterOverflow) of \(queued + 1)")
            _ = try mount.mustSucceed("cat data/f > /dev/null")
            #expect(Int(try mount.xattr("data", "user.cache.hits")) == afterOverflow + 1)
        }
    }

    /// A close event names the file by its name: a file written and at once renamed (a
    /// download's temporary name), or removed and made again under its name, must still be
    /// finished by its own close, so a crash after the rename keeps it whole.
    @Test func aFileWrittenThenRenamedIsWholeAfterACrash() throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"]) { mount in
            _ = try mount.mustSucceed("""
                head -c 300000 /dev/urandom > data/part && mv data/part data/whole
                echo one > data/g && rm data/g && echo two > data/g
                """)
            let sums = try mount.mustSucceed("sha256sum data/whole data/g")
            // A pool setting commits after every change queued before it.
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 4 data")
            try mount.crash()
            try mount.mount()
            #expect(try mount.mustSucceed("sha256sum data/whole data/g") == sums)
        }
    }

    /// What counting hits relies on, checked on this kernel: it merges an event identical to
    /// the last one queued, so with closes alone watched a burst of reads of one file would
    /// queue as one event; with opens watched too, no two events in a row are identical and
    /// every read keeps its own. The daemon watches both, so it counts each read of a burst.
    @Test func aBurstOfReadsOfOneFileCountsEveryRead() throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"]) { mount in
            _ = try mount.mustSucceed("head -c 1024 /dev/urandom > data/burst")
            let before = try #require(Int(try mount.xattr("data", "user.cache.hits")))
            let reads = 500
            let script = """
                import ctypes, os, struct, sys
                libc = ctypes.CDLL(None, use_errno=True)
                IN_CLOSE_NOWRITE, IN_OPEN, IN_NONBLOCK = 0x10, 0x20, 0o4000
                path, directory, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
                def queued(mask):
                    fd = libc.inotify_init1(IN_NONBLOCK)
                    assert fd >= 0 and libc.inotify_add_watch(fd, directory.encode(), mask) >= 0
                    for _ in range(n):
                        with open(path, "rb") as f: f.read()
                    data, count, offset = os.read(fd, 1 << 20), 0, 0
                    os.close(fd)
                    while offset < len(data):
                        offset += 16 + struct.unpack_from("iIII", data, offset)[3]
                        count += 1
                    return count
                print(queued(IN_CLOSE_NOWRITE), queued(IN_OPEN | IN_CLOSE_NOWRITE))
                """
            let queued = try Shell.run(["python3", "-c", script, mount.path("data/burst"), mount.path("data"), "\(reads)"])
            #expect(queued.succeeded, "\(queued.error)")
            #expect(queued.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1 \(2 * reads)",
                    "events queued for \(reads) reads (closes alone, then opens and closes): \(queued.output)")
            var hits = ""
            #expect(try Shell.waitUntil(seconds: 5) {
                hits = try mount.xattr("data", "user.cache.hits")
                return hits == "\(before + 2 * reads)"
            }, "hits: \(hits), expected \(before + 2 * reads)")
        }
    }
}

/// Another process that holds a file open for reading until ``close()`` (or the end of the
/// test): its descriptor is readable at ``descriptorPath``.
private final class OpenReader {
    private let process: ChildProcess
    let descriptorPath: String

    init(of path: String) throws {
        let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { Glibc.close(quiet) }
        process = try ChildProcess(["bash", "-c", "exec 3< '\(path)'; exec sleep 60"], stdin: quiet, stdout: quiet, stderr: quiet)
        descriptorPath = "/proc/\(process.pid)/fd/3"
        let opened = Shell.waitUntil(seconds: 5) { [descriptorPath] in FileManager.default.fileExists(atPath: descriptorPath) }
        if !opened { close() }
        try #require(opened, "\(path) was not opened")
    }

    /// Kills the process, which closes the file (again: harmless).
    func close() {
        process.signal(SIGKILL)
        process.wait()
    }
}
