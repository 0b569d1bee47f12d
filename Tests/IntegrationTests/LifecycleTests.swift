import Foundation
import Glibc
import Testing

@Suite struct LifecycleTests {
    @Test func fusermountEndsTheDaemonWithZeroAndTheStoreReopens() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo kept > data/f")
            #expect(try mount.unmount() == 0)
            #expect(!mount.isMounted)
            try mount.mount()
            #expect(try mount.mustSucceed("cat data/f") == "kept")
        }
    }

    @Test func sigtermEndsTheDaemonWithZero() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo kept > data/f")
            let daemon = try #require(mount.daemon)
            daemon.signal(SIGTERM)
            try #require(Shell.waitUntil(seconds: 10) { !daemon.isRunning })
            #expect(daemon.terminationStatus == 0)
            #expect(!mount.isMounted)
        }
    }

    /// Found by scripts/bench: a mount that starts far over a pool's limit evicts tens of
    /// thousands of files in one pass, and an unmount meanwhile waited for all of them (and
    /// sent each notification to a kernel that was gone). The pass now ends after its batch;
    /// the next mount goes on.
    @Test func anUnmountDuringALongEvictionEndsPromptlyAndTheNextMountGoesOn() throws {
        try withMountedStore { mount in
            #expect(try mount.unmount() == 0)
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().path
            // 60,000 files of 1 KiB: about 59 MiB in a pool of 25 MiB.
            let filled = try Shell.run(["python3", root + "/scripts/lib/bench-synthetic-store.py", mount.store, "60000",
                                        "1024"])
            try #require(filled.succeeded, "\(filled.error)")
            try mount.mount()
            let daemon = try #require(mount.daemon)
            // The mount's first round has started the pass: unmount while it runs.
            #expect(try Shell.waitUntil(seconds: 20) { Int(try mount.xattr("data", "user.cache.evicted_files")) ?? 0 > 0 })
            let started = Date()
            #expect(try Shell.run(["fusermount3", "-u", mount.mountpoint]).succeeded)
            #expect(Shell.waitUntil(seconds: 10) { !daemon.isRunning }, "the daemon still runs 10 s after unmount")
            let seconds = Date().timeIntervalSince(started)
            #expect(daemon.terminationStatus == 0)
            // One notification may be on its way as the connection closes; not a batch of them.
            let lateNotifications = mount.daemonLog.components(separatedBy: "Bad file descriptor").count - 1
            #expect(lateNotifications <= 1, "\(lateNotifications) notifications sent after the unmount")
            try mount.forgetDaemon()
            try mount.mount()
            #expect(try Shell.waitUntil(seconds: 60) { Int(try mount.xattr("data", "user.cache.usage")) ?? .max <= 25 << 20 },
                    "the next mount did not bring the pool within its limit (unmount took \(seconds) s)")
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.succeeded, "\(verify.output)")
        }
    }

    @Test func aSecondMountOfTheSameStoreFailsClearlyAndTheFirstKeepsWorking() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f")
            let other = mount.directory + "/other"
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
            let second = try Shell.run([MountedStore.executable, "mount", mount.store, other])
            #expect(second.status != 0)
            #expect(second.error.contains("already in use by another cachefs daemon"), "\(second.error)")
            #expect(try mount.mustSucceed("cat data/f") == "x")
        }
    }

    @Test func badMountpointsAndOptionsFailWithOneLine() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-bad-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/full", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: base + "/full/x", contents: Data())
        defer { try? FileManager.default.removeItem(atPath: base) }
        let cases: [([String], String)] = [
            (["mount", base + "/store", base + "/missing"], "does not exist"),
            (["mount", base + "/store", base + "/full"], "is not empty"),
            (["mount", base + "/store", base + "/full", "-o", "colour=blue"], "unknown mount option"),
            (["mount", base + "/store", base + "/full", "--pool", "data"], "bad --pool"),
            (["mount", base + "/store", base + "/full", "-o", "s3_endpoint=ftp://x"], "bad mount option s3_endpoint"),
            (["mount", base + "/store", base + "/full", "--origin", "data=http://"], "is not a URL with a host"),
            (["mount", base + "/store", base + "/full", "-o", "kernel_hits=maybe"], "kernel_hits takes on or off"),
            (["mount", base + "/store", base + "/full", "-o", "kernel_hits,writeback_cache"],
             "kernel_hits and writeback_cache cannot be used together"),
            (["mount", base + "/store", base + "/full", "-o", "single_threaded,kernel_hits=on"],
             "kernel_hits and single_threaded cannot be used together"),
        ]
        for (arguments, message) in cases {
            let result = try Shell.run([MountedStore.executable] + arguments)
            #expect(result.status != 0)
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
            #expect(!result.error.contains("Fatal error"))
        }
    }

    @Test func backgroundMountReturnsWhenReady() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-bg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
        defer {
            _ = try? Shell.run(["fusermount3", "-u", base + "/mnt"])
            _ = try? Shell.run(["fusermount3", "-uz", base + "/mnt"])
            try? FileManager.default.removeItem(atPath: base)
        }
        let result = try Shell.run([MountedStore.executable, "mount", base + "/store", base + "/mnt", "-o", "min_free=0"])
        #expect(result.status == 0, "\(result.error)")
        // Ready means ready: no waiting before the first use.
        let listing = try Shell.run(["ls", base + "/mnt"])
        #expect(listing.output.split(separator: "\n") == ["avatars", "data", "thumbnails"])
        #expect(try Shell.run(["fusermount3", "-u", base + "/mnt"]).succeeded)
        // The daemon lets go of the store once it has flushed.
        #expect(try Shell.waitUntil(seconds: 10) {
            try !Shell.run(["pgrep", "-f", "cachefs mount \(base)/store"]).succeeded
        })
    }
}
