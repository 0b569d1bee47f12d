import Foundation
import Testing

/// The store on a small tmpfs of its own, so "disk full" is real and harmless.
@Suite struct PressureTests {
    @Test func writingPastMinFreeEvictsAndATrulyTooLargeWriteIsENOSPC() throws {
        try SmallDisk.with(mountOptions: ["--pool", "data=0", "--pool", "keep=0", "-o", "min_free=16M"]) { disk in
            let run = disk.run
            // A persistent file that pressure must never touch.
            #expect(try run("mkdir keep/p.d && setfattr -n user.cache.persistent -v 1 keep/p.d && head -c 4000000 /dev/urandom > keep/p.d/p").succeeded)
            let kept = try run("sha256sum < keep/p.d/p").output
            // 60 MiB of cached files through a 64 MiB disk that must keep 16 MiB free.
            for index in 1...15 {
                let write = try run("head -c 4000000 /dev/urandom > data/f\(index)")
                #expect(write.succeeded, "write \(index): \(write.error)")
            }
            #expect(Shell.waitUntil(seconds: 5) { (try? disk.availableBytes()) ?? 0 >= 15 << 20 })
            let listed = try run("set -o pipefail; ls data | wc -l")
            #expect(listed.succeeded && listed.output.trimmingCharacters(in: .whitespacesAndNewlines) != "15", "\(listed)")
            #expect(try run("test -e data/f15 && echo yes").output.contains("yes"))
            // More than the whole disk can hold: ENOSPC reaches the writer, and the daemon stays up.
            _ = try run("mkdir keep/big && setfattr -n user.cache.persistent -v 1 keep/big")
            let huge = try run("head -c 80000000 /dev/zero > keep/big/huge")
            #expect(!huge.succeeded && huge.error.contains("No space left"), "\(huge.error)")
            _ = try run("rm -f keep/big/huge")
            // The same through fsync (with `-o writeback_cache` the error would come from the write-back).
            let synced = try run("dd if=/dev/zero of=keep/big/huge bs=1M count=80 conv=fsync")
            #expect(!synced.succeeded && synced.error.contains("No space left"), "\(synced.error)")
            _ = try run("rm -f keep/big/huge")
            #expect(try run("sha256sum < keep/p.d/p").output == kept)
            let alive = try run("echo alive > data/after && cat data/after")
            #expect(alive.output.contains("alive"), "\(alive.error)")
            let events = try String(contentsOfFile: disk.store + "/events.jsonl", encoding: .utf8)
            #expect(events.contains("\"event\":\"pressure\""))
        }
    }

    /// On ext4 a removed file's space is free once `rm` returns. Here its bytes wait for the
    /// kernel's FORGET, which follows a moment later: a write right after the `rm`, with nothing
    /// left to evict, must wait for them rather than answer ENOSPC. Ten rounds, each filling
    /// the disk with a persistent file.
    @Test func aWriteRightAfterRemovingTheFileThatFilledTheDiskSucceeds() throws {
        try SmallDisk.with(mountOptions: ["--pool", "keep=0", "-o", "min_free=0"]) { disk in
            let run = disk.run
            #expect(try run("mkdir keep/big && setfattr -n user.cache.persistent -v 1 keep/big").succeeded)
            for round in 1...10 {
                let filled = try run("head -c 80000000 /dev/zero > keep/big/huge")
                #expect(!filled.succeeded && filled.error.contains("No space left"), "round \(round): \(filled.error)")
                let after = try run("rm keep/big/huge && echo alive > keep/big/after && cat keep/big/after && rm keep/big/after")
                #expect(after.succeeded && after.output.contains("alive"), "round \(round): \(after.error)")
            }
        }
    }

    /// With no free-space margin at all (`min_free=0`) the first sign of a full disk is a
    /// write's ENOSPC: the cache must evict and go on, never jam or answer EIO, with one
    /// writer or several at once.
    @Test(arguments: [1, 2])
    func aFullDiskEvictsTheOldestFilesAndEveryWriteSucceeds(writers: Int) throws {
        try SmallDisk.with(mountOptions: ["--pool", "data=0", "-o", "min_free=0"]) { disk in
            let filesPerWriter = 22
            // The sources live outside the small disk, so each copy can be compared after.
            let sources = disk.base + "/sources"
            try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
            for index in 1...filesPerWriter {
                let made = try Shell.bash("head -c 4000000 /dev/urandom > '\(sources)/\(index)'")
                try #require(made.succeeded, "\(made.error)")
            }
            // A jammed cache hangs a write: the timeout turns that into a failure.
            let loops = (0..<writers).map { writer in
                "(for i in $(seq 1 \(filesPerWriter)); do timeout -s KILL 60 cp \(sources)/$i data/w\(writer)-$i || echo \"FAILED w\(writer)-$i\"; done) &"
            }
            let copied = try disk.run(loops.joined(separator: "\n") + "\nwait")
            #expect(copied.succeeded && !copied.output.contains("FAILED"), "\(copied.output)\(copied.error)")
            // While mounted, the index's headroom lives in its log: no reserve file takes space.
            #expect(!FileManager.default.fileExists(atPath: disk.store + "/reserve"))
            let present = Set(try disk.run("ls data").output.split(separator: "\n").map(String.init))
            for writer in 0..<writers {
                let kept = (1...filesPerWriter).filter { present.contains("w\(writer)-\($0)") }
                // The files that stay are the newest of each writer: a run up to its last file.
                #expect(kept.last == filesPerWriter, "writer \(writer) kept \(kept)")
                #expect(kept == Array((kept.first ?? 1)...filesPerWriter), "writer \(writer) kept \(kept)")
                #expect(kept.count < filesPerWriter, "a 64 MiB disk cannot hold all of writer \(writer)'s files")
                for index in kept {
                    let same = try disk.run("cmp \(sources)/\(index) data/w\(writer)-\(index)")
                    #expect(same.succeeded, "w\(writer)-\(index): \(same.output)\(same.error)")
                }
            }
            // Every eviction is recorded, also those whose events met the full disk first (they
            // wait in memory for the room the eviction makes).
            let events = try String(contentsOfFile: disk.store + "/events.jsonl", encoding: .utf8)
            let pressureEvents = events.split(separator: "\n").filter { $0.contains("\"event\":\"pressure\"") }.count
            #expect(pressureEvents == writers * filesPerWriter - present.count, "\(pressureEvents) pressure events")
            try disk.unmount()
            #expect(FileManager.default.fileExists(atPath: disk.store + "/reserve"), "a clean unmount takes the reserve back")
            #expect(!disk.daemonLog.contains("database or disk is full"), "the index met a full disk:\n\(disk.daemonLog)")
            let verify = try Shell.run([MountedStore.executable, "verify", disk.store])
            #expect(verify.succeeded && verify.output.contains("clean"), "\(verify.output)\(verify.error)")
        }
    }

    /// A pool's floor (`min_size`) holds while another pool fills the disk: pressure takes
    /// from the pool above its floor, although the floored pool's files were read longest ago,
    /// and every write succeeds.
    @Test func aPoolsFloorHoldsUnderDiskPressureAndNoWriteFails() throws {
        try SmallDisk.with(mountOptions: ["--pool", "data=0", "--pool", "thumbnails=0", "-o", "min_free=0"]) { disk in
            let run = disk.run
            let floor = 16 << 20
            #expect(try run("setfattr -n user.cache.min_size -v 16M thumbnails").succeeded)
            #expect(try run("getfattr --only-values -n user.cache.min_size thumbnails").output == String(floor))
            // 20 MB of thumbnails, the least recently used files of the store.
            for index in 1...5 {
                let write = try run("head -c 4000000 /dev/urandom > thumbnails/t\(index)")
                #expect(write.succeeded, "thumbnail \(index): \(write.error)")
            }
            // 80 MB more through a 64 MiB disk: pressure must come, and every write must succeed.
            let sources = disk.base + "/sources"
            try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
            let made = try Shell.bash("head -c 4000000 /dev/urandom > '\(sources)/f'")
            try #require(made.succeeded, "\(made.error)")
            for index in 1...20 {
                let copy = try run("timeout -s KILL 60 cp \(sources)/f data/f\(index)")
                #expect(copy.succeeded, "data file \(index): \(copy.error)")
                let usage = Int(try run("getfattr --only-values -n user.cache.usage thumbnails").output) ?? -1
                #expect(usage >= floor, "after data file \(index) thumbnails hold \(usage) bytes, below the floor")
            }
            let events = try String(contentsOfFile: disk.store + "/events.jsonl", encoding: .utf8)
                .split(separator: "\n").filter { $0.contains("\"event\":\"pressure\"") }
            #expect(events.contains { $0.contains("\"pool\":\"data\"") }, "no pressure event took from data")
            #expect(events.contains { $0.contains("above its floor") }, "no event says why: \(events.prefix(3))")
            #expect(!events.contains { $0.contains("\"pool\":\"thumbnails\"") && $0.contains("every pool is at its floor") })
            let kept = try run("ls thumbnails | wc -l").output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(Int(kept) ?? 0 >= 4, "thumbnails kept \(kept) files")
        }
    }

    /// Floors that add up to more than the disk holds are allowed, with a warning in the log
    /// and in `cachefs status` that goes when they fit again.
    @Test func floorsLargerThanTheDiskAreWarnedAbout() throws {
        try SmallDisk.with(mountOptions: ["--pool", "data=0", "-o", "min_free=0"]) { disk in
            #expect(try disk.run("setfattr -n user.cache.min_size -v 40M data && setfattr -n user.cache.min_size -v 40M thumbnails").succeeded)
            let status = try Shell.run([MountedStore.executable, "status", disk.mounted.mountpoint, "--json"])
            #expect(status.succeeded && status.output.contains("min_size floors add up to"), "\(status.output)\(status.error)")
            #expect(status.output.contains("\"min_size\" : 41943040") || status.output.contains("\"min_size\":41943040"), "\(status.output)")
            #expect(disk.daemonLog.contains("min_size floors add up to"))
            #expect(try disk.run("setfattr -n user.cache.min_size -v 0 thumbnails").succeeded)
            let after = try Shell.run([MountedStore.executable, "status", disk.mounted.mountpoint])
            #expect(after.succeeded && !after.output.contains("min_size floors"), "\(after.output)")
        }
    }
}

/// A cachefs mount whose store is the root of a 64 MiB tmpfs; always unmounted (the daemon
/// killed if it hangs), also when the test fails.
struct SmallDisk {
    let mounted: MountedStore
    var base: String { mounted.directory }
    var store: String { mounted.store }
    var daemonLog: String { mounted.daemonLog }

    static func with(mountOptions: [String], _ body: (SmallDisk) throws -> Void) throws {
        var tmpfsPath: String?
        let mounted: MountedStore
        do {
            mounted = try MountedStore(arguments: mountOptions) { mounted in
                let tmpfs = try Shell.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mounted.store])
                try #require(tmpfs.succeeded, "cannot mount a tmpfs: \(tmpfs.error)")
                tmpfsPath = mounted.store
            }
        } catch {
            // The daemon did not come up: the tmpfs must not outlive the test.
            if let tmpfsPath {
                _ = try? Shell.run(["umount", tmpfsPath])
                try? FileManager.default.removeItem(atPath: (tmpfsPath as NSString).deletingLastPathComponent)
            }
            throw error
        }
        defer {
            mounted.forceStop()
            _ = Shell.waitUntil(seconds: 10) { (try? Shell.run(["umount", mounted.store]).succeeded) == true }
        }
        do {
            try body(SmallDisk(mounted: mounted))
        } catch {
            Issue.record("daemon log:\n\(mounted.daemonLog)")
            throw error
        }
    }

    func run(_ script: String) throws -> CommandResult {
        try mounted.sh(script)
    }

    func availableBytes() throws -> Int {
        let free = try Shell.run(["df", "--output=avail", "-B1", store]).output
        return free.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    func unmount() throws {
        let status = try mounted.unmount()
        guard status == 0 else { throw MountError(message: "daemon exited \(status); log:\n\(daemonLog)") }
    }
}
