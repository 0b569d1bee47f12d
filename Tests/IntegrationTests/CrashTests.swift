import Foundation
import Glibc
import Testing

@Suite struct CrashTests {
    /// Also with the kernel serving opens (`kernel_hits`), where the write is marked at its
    /// first WRITE and finished by the close event.
    @Test(arguments: [[], ["-o", "kernel_hits"]])
    func killDuringAWriteDropsThePartialFileAndKeepsClosedOnes(options: [String]) throws {
        try withMountedStore(arguments: ["--pool", "data=0"] + options) { mount in
            for index in 1...3 {
                _ = try mount.mustSucceed("head -c \(index * 300_000) /dev/urandom > data/closed\(index)")
            }
            let sums = try mount.mustSucceed("sha256sum data/closed* | sort")
            // A writer that keeps going until the daemon dies under it.
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let writer = try ChildProcess(
                ["dd", "if=/dev/zero", "of=\(mount.path("data/partial"))", "bs=64k", "count=1000000"],
                stdin: quiet, stdout: quiet, stderr: quiet)
            #expect(try Shell.waitUntil(seconds: 20) {
                try (Int(mount.sh("stat -c %s data/partial").output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 1 << 20
            })
            try mount.crash()
            writer.wait()
            try mount.mount()
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "closed1 closed2 closed3")
            #expect(try mount.mustSucceed("sha256sum data/closed* | sort") == sums)
            let sizes = try mount.mustSucceed("stat -c %s data/* | awk '{s+=$1} END {print s}'")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            // No bytes without an entry: one object file per file present.
            #expect(try mount.objectFileCount() == 3)
        }
    }

    /// An overwrite killed after its `open(O_TRUNC)` and before its first write: the emptied
    /// cached file is dropped at the next mount, never kept as a whole (empty) one, while a
    /// `truncate` with no descriptor open is a finished change that stays. With `kernel_hits`
    /// (the default) the kernel opens by itself and sends the truncation afterwards, with no handle: the
    /// truncation of a file it has open starts the write.
    @Test(arguments: [["-o", "kernel_hits=off"], []])
    func killBetweenAnOverwritesTruncationAndItsFirstWriteDropsTheEmptiedFile(options: [String]) throws {
        try withMountedStore(arguments: ["--pool", "data=0"] + options) { mount in
            _ = try mount.mustSucceed("head -c 300000 /dev/urandom > data/overwritten")
            _ = try mount.mustSucceed("head -c 1000 /dev/urandom > data/truncated && truncate -s 100 data/truncated")
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            // The shell's `>` opens with O_TRUNC; it then holds the descriptor, writing nothing.
            let holder = try ChildProcess(["sh", "-c", "exec 3>'\(mount.path("data/overwritten"))'; exec sleep 600"],
                                          stdin: quiet, stdout: quiet, stderr: quiet)
            defer {
                holder.signal(SIGKILL)
                _ = holder.wait()
            }
            #expect(try Shell.waitUntil(seconds: 20) {
                try mount.mustSucceed("stat -c %s data/overwritten") == "0"
            })
            // An fsync commits the index: without the write's mark, the emptied file would now
            // be recorded as finished.
            _ = try mount.mustSucceed("sync data/overwritten")
            try mount.crash()
            try mount.mount()
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "truncated")
            #expect(try mount.mustSucceed("stat -c %s data/truncated") == "100")
            #expect(try mount.objectFileCount() == 1)
        }
    }

    /// The usage rows commit with the entries (see UsageTotals): killed in the middle of creates
    /// and unlinks, the next mount reads them and they equal the bytes present.
    @Test func killDuringCreatesAndUnlinksLeavesUsageEqualToTheBytesPresent() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            // Creates files of growing sizes and unlinks every other one, until the daemon dies.
            let churn = try ChildProcess(
                ["bash", "-c", """
                    cd '\(mount.path("data"))' || exit 1
                    for i in $(seq 1 100000); do
                        head -c $((i % 5000 + 1)) /dev/zero > f$i || exit 0
                        if ((i % 2 == 0)); then rm -f f$((i - 1)) || exit 0; fi
                    done
                    """],
                stdin: quiet, stdout: quiet, stderr: quiet)
            // Killed once 300 files are present: the churn's speed varies with the machine's
            // load (fork and exec per file), so only a churn that stops growing fails here.
            var present = 0, lastGrowth = Date()
            while present <= 300 && Date().timeIntervalSince(lastGrowth) < 10 {
                let listed = Int(try mount.mustSucceed("ls data | wc -l")) ?? 0
                if listed > present { (present, lastGrowth) = (listed, Date()) }
                usleep(20_000)
            }
            #expect(present > 300, "the churn stopped growing at \(present) files")
            try mount.crash()
            churn.wait()
            try mount.mount()
            let sizes = try mount.mustSucceed("find data -type f -printf '%s\\n' | awk '{s+=$1} END {print s+0}'")
            let files = try mount.mustSucceed("find data -type f | wc -l")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            #expect(try mount.xattr("data", "user.cache.files") == files)
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.status == 0, "\(verify.output) \(verify.error)")
            try mount.mount()
        }
    }

    /// Read times reach the index's access log every couple of seconds and the entries' rows
    /// only at a fold (docs/eviction.md): killed after its reads were logged, the daemon's next
    /// mount folds the log, and every file keeps the last access it showed before the kill.
    @Test func killAfterReadsKeepsTheirAccessTimes() throws {
        try withMountedStore(arguments: ["--pool", "data=0", "-o", "kernel_hits"]) { mount in
            _ = try mount.mustSucceed("for f in a b c; do echo $f > data/$f; done")
            // c, then a, a second later (user.cache.last_access shows seconds): read through
            // the kernel's cache (their closes are the hits).
            _ = try mount.mustSucceed("sleep 1.1; cat data/c data/c > /dev/null; sleep 0.05; cat data/a data/a > /dev/null")
            let names = ["a", "b", "c"]
            var shown: [String: String] = [:]
            #expect(try Shell.waitUntil(seconds: 10) {
                shown = try Dictionary(uniqueKeysWithValues: names.map { ($0, try mount.xattr("data/\($0)", "user.cache.last_access")) })
                return shown["c"]! > shown["b"]! && shown["a"]! > shown["b"]!
            }, "the reads did not move the files' last access: \(shown)")
            // Until they are in the access log (the evictor's next periodic step).
            let logged = """
                import sqlite3, sys
                db = sqlite3.connect(f"file:{sys.argv[1]}/index.sqlite?mode=ro", uri=True)
                print(db.execute("SELECT COUNT(*) FROM access_log").fetchone()[0])
                """
            #expect(try Shell.waitUntil(seconds: 10) {
                (Int(try Shell.run(["python3", "-c", logged, mount.store]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0
            }, "no read time reached the access log")
            try mount.crash()
            try mount.mount()
            for name in names {
                #expect(try mount.xattr("data/\(name)", "user.cache.last_access") == shown[name], "data/\(name)")
            }
            #expect(try mount.xattr("data", "user.cache.oldest_access") == shown["b"])
            #expect(try Shell.run(["python3", "-c", logged, mount.store]).output.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                    "the mount left the access log unfolded")
            // And the order within the second: b never read goes first, then c, read before a.
            _ = try mount.mustSucceed("setfattr -n user.cache.low_watermark -v 100 data && setfattr -n user.cache.max_files -v 2 data")
            #expect(try Shell.waitUntil(seconds: 10) { try mount.mustSucceed("ls data | tr '\\n' ' '") == "a c" })
            _ = try mount.mustSucceed("setfattr -n user.cache.max_files -v 1 data")
            var left = ""
            #expect(try Shell.waitUntil(seconds: 10) {
                left = try mount.mustSucceed("ls data | tr '\\n' ' '")
                return left == "a"
            }, "left: \(left)")
        }
    }

    /// A daemon killed while it folds read times into the files' rows (a fold a purge forces,
    /// of 3,000 files read and logged, in holds of 1,024; wherever in it the kill lands):
    /// the purge's caller is not left waiting, and the next mount gives every file the last
    /// access it showed before the kill, and its bytes.
    @Test func killDuringAFoldLeavesNoClientWaitingAndKeepsEveryRead() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let count = 3_000
            _ = try mount.mustSucceed("for i in $(seq \(count)); do echo $i > data/f$i; done")
            let contents = try mount.mustSucceed("sleep 1.1; cat data/* | md5sum")
            // Until every read is in the access log (the evictor's next periodic step).
            let loggedFiles = """
                import sqlite3, struct, sys
                db = sqlite3.connect(f"file:{sys.argv[1]}/index.sqlite?mode=ro", uri=True)
                ids = set()
                for (blob,) in db.execute("SELECT times FROM access_log"):
                    ids.update(struct.unpack_from("<q", blob, offset)[0] for offset in range(0, len(blob) - 15, 16))
                print(len(ids))
                """
            var logged = 0
            #expect(try Shell.waitUntil(seconds: 10) {
                logged = Int(try Shell.run(["python3", "-c", loggedFiles, mount.store]).output
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                return logged >= count
            }, "\(logged) of \(count) reads reached the access log")
            let shown = try mount.mustSucceed("getfattr -n user.cache.last_access data/*")
            #expect(shown.components(separatedBy: "user.cache.last_access=").count == count + 1)

            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let purge = try ChildProcess(["setfattr", "-n", "user.cache.purge", "-v", "1", mount.path("data")],
                                         stdin: quiet, stdout: quiet, stderr: quiet)
            usleep(2_000)
            try mount.crash()
            #expect(Shell.waitUntil(seconds: 10) { !purge.isRunning }, "the purge's caller still waits on a dead daemon")
            if purge.isRunning { purge.signal(SIGKILL) }
            purge.wait()

            try mount.mount()
            #expect(try mount.mustSucceed("getfattr -n user.cache.last_access data/*") == shown)
            #expect(try mount.mustSucceed("cat data/* | md5sum") == contents)
        }
    }
}
