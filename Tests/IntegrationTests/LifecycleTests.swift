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
        #expect(Shell.waitUntil(seconds: 10) {
            (try? Shell.run(["pgrep", "-f", "cachefs mount \(base)/store"]).succeeded) == false
        })
    }
}
