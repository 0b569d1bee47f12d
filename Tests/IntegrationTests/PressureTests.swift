import Foundation
import Testing

/// The store on a small tmpfs of its own, so "disk full" is real and harmless.
@Suite struct PressureTests {
    @Test func writingPastMinFreeEvictsAndATrulyTooLargeWriteIsENOSPC() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-small-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/store", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
        let tmpfs = try Shell.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", base + "/store"])
        try #require(tmpfs.succeeded, "cannot mount a tmpfs: \(tmpfs.error)")
        defer {
            _ = try? Shell.run(["fusermount3", "-u", base + "/mnt"])
            _ = try? Shell.run(["fusermount3", "-uz", base + "/mnt"])
            _ = Shell.waitUntil(seconds: 10) { (try? Shell.run(["umount", base + "/store"]).succeeded) == true }
            try? FileManager.default.removeItem(atPath: base)
        }
        let mount = try Shell.run([MountedStore.executable, "mount", base + "/store", base + "/mnt",
                                   "--pool", "data=0", "--pool", "keep=0", "-o", "min_free=16M"])
        try #require(mount.succeeded, "\(mount.error)")
        let run = { (script: String) in try Shell.bash("cd '\(base)/mnt' || exit 99\n\(script)") }
        // A persistent file that pressure must never touch.
        #expect(try run("mkdir keep/p.d && setfattr -n user.cache.persistent -v 1 keep/p.d && head -c 4000000 /dev/urandom > keep/p.d/p").succeeded)
        let kept = try run("sha256sum < keep/p.d/p").output
        // 60 MiB of cached files through a 64 MiB disk that must keep 16 MiB free.
        for index in 1...15 {
            let write = try run("head -c 4000000 /dev/urandom > data/f\(index)")
            #expect(write.succeeded, "write \(index): \(write.error)")
        }
        #expect(Shell.waitUntil(seconds: 5) {
            let free = (try? Shell.run(["df", "--output=avail", "-B1", base + "/store"]).output)?
                .split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
            return free >= 15 << 20
        })
        #expect(try run("ls data | wc -l").output.trimmingCharacters(in: .whitespacesAndNewlines) != "15")
        #expect(try run("test -e data/f15 && echo yes").output.contains("yes"))
        // More than the whole disk can hold: ENOSPC reaches the writer, and the daemon stays up.
        _ = try run("mkdir keep/big && setfattr -n user.cache.persistent -v 1 keep/big")
        let huge = try run("head -c 80000000 /dev/zero > keep/big/huge")
        #expect(!huge.succeeded && huge.error.contains("No space left"), "\(huge.error)")
        _ = try run("rm -f keep/big/huge")
        // The same through fsync: with the writeback cache the error comes from the write-back.
        let synced = try run("dd if=/dev/zero of=keep/big/huge bs=1M count=80 conv=fsync")
        #expect(!synced.succeeded && synced.error.contains("No space left"), "\(synced.error)")
        _ = try run("rm -f keep/big/huge")
        #expect(try run("sha256sum < keep/p.d/p").output == kept)
        let alive = try run("echo alive > data/after && cat data/after")
        #expect(alive.output.contains("alive"), "\(alive.error)")
        let events = try String(contentsOfFile: base + "/store/events.jsonl", encoding: .utf8)
        #expect(events.contains("\"event\":\"pressure\""))
    }
}
