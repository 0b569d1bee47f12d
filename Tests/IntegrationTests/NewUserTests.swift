import Foundation
import Glibc
import Testing

/// The sharp edges a new user met (issue 9), each with the behaviour that replaced it.
@Suite struct NewUserTests {
    private func cachefs(_ arguments: String...) throws -> CommandResult {
        try Shell.run([MountedStore.executable] + arguments)
    }

    @Test func aFileLargerThanItsPoolIsRefusedWithoutEvictingAnything() throws {
        try withMountedStore(arguments: ["--pool", "thumbnails=5M"]) { mount in
            _ = try mount.mustSucceed("""
                for name in a b c; do head -c 100000 /dev/urandom > thumbnails/$name; done
                head -c 6000000 /dev/urandom > '\(mount.directory)/big'
                """)
            let copy = try mount.sh("cp '\(mount.directory)/big' thumbnails/")
            #expect(!copy.succeeded)
            #expect(copy.error.contains("File too large"), "\(copy.error)")
            #expect(try mount.mustSucceed("ls thumbnails | tr '\\n' ' '") == "a b c")
            #expect(try mount.xattr("thumbnails", "user.cache.usage") == "300000")
            let events = try cachefs("events", mount.mountpoint, "--json")
            #expect(events.output.contains("\"refused\""), "\(events.output)")
            #expect(!events.output.contains("\"evicted\""), "\(events.output)")
        }
    }

    @Test func aFileThatFitsIsMadeRoomForWhenItsWriteEnds() throws {
        try withMountedStore(arguments: ["--pool", "thumbnails=5M"]) { mount in
            _ = try mount.mustSucceed("""
                for name in a b c; do head -c 1000000 /dev/urandom > thumbnails/$name; done
                head -c 4000000 /dev/urandom > '\(mount.directory)/new'
                cp '\(mount.directory)/new' thumbnails/
                """)
            #expect(try Shell.waitUntil(seconds: 10) {
                try (Int(mount.xattr("thumbnails", "user.cache.usage")) ?? .max) <= 5 << 20
            })
            let names = try mount.mustSucceed("ls thumbnails | tr '\\n' ' '")
            #expect(names.hasSuffix("new"), "\(names)")
            #expect(!names.contains("a "), "the least recently used file stayed: \(names)")
        }
    }

    @Test func rmRfOfAPoolEmptiesItAndKeepsItsPolicy() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("mkdir -p avatars/x && echo 1 > avatars/x/f && echo 2 > avatars/g")
            let removal = try mount.sh("rm -rf avatars")
            #expect(!removal.succeeded)
            #expect(removal.error.contains("Device or resource busy"), "\(removal.error)")
            #expect(try mount.mustSucceed("ls -A avatars | wc -l") == "0")
            #expect(try mount.xattr("avatars", "user.cache.max_age") == "604800")
            #expect(try mount.xattr("avatars", "user.cache.max_size") == String(5 << 20))
            #expect(try mount.mustSucceed("rm -rf ./*; ls | tr '\\n' ' '") == "avatars data thumbnails")
        }
    }

    @Test func removePoolRemovesAnEmptyPoolAndItsPolicyOnly() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > avatars/f")
            let busy = try cachefs("remove-pool", mount.mountpoint, "avatars")
            #expect(busy.status == 1)
            #expect(busy.error == "cachefs: pool avatars is not empty: remove its files first (cachefs clear "
                + "\(mount.mountpoint) avatars for cached ones, rm for pinned and persistent ones)\n")
            let missing = try cachefs("remove-pool", mount.mountpoint, "nopool")
            #expect(missing.error.contains("no pool named 'nopool'"), "\(missing.error)")
            _ = try mount.mustSucceed("rm avatars/f")
            let removed = try cachefs("remove-pool", mount.mountpoint, "avatars")
            #expect(removed.succeeded, "\(removed.error)")
            #expect(try mount.mustSucceed("ls | tr '\\n' ' '") == "data thumbnails")
            try mount.remount()
            #expect(try mount.mustSucceed("ls | tr '\\n' ' '") == "data thumbnails")
            _ = try mount.mustSucceed("mkdir avatars")
            #expect(try mount.xattr("avatars", "user.cache.max_age") == "0")
        }
    }

    @Test func aNonEmptyDirectoryThatIsNotAStoreIsRefusedAndLeftAlone() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-docs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/documents", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
        try "mine".write(toFile: base + "/documents/letter.txt", atomically: true, encoding: .utf8)
        chmod(base + "/documents", 0o755)
        let result = try cachefs("mount", base + "/documents", base + "/mnt", "--foreground")
        #expect(result.status == 1)
        #expect(result.error == "cachefs: \(base)/documents is neither empty nor a cachefs store (it has no index.sqlite); "
            + "give a new or empty directory as the store\n")
        var info = stat()
        #expect(stat(base + "/documents", &info) == 0 && info.st_mode & 0o7777 == 0o755)
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/documents") == ["letter.txt"])
    }

    @Test func mountingOverTheDeadMountOfAKilledDaemonClearsItAndMounts() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo kept > data/f && sync")
            usleep(200_000)  // the commit window passes: the file is in the index
            let daemon = try #require(mount.daemon)
            daemon.signal(SIGKILL)
            daemon.wait()
            let probe = try Shell.run(["stat", "-f", mount.mountpoint])
            #expect(probe.error.contains("Transport endpoint is not connected"), "\(probe.error)")
            try mount.mount()
            // The dead mount was listed already, so wait for the new one to answer.
            #expect(try Shell.waitUntil(seconds: 10) { try mount.sh("cat data/f").output == "kept\n" })
            #expect(mount.daemonLog.contains("removed the dead mount on \(mount.mountpoint)"), "\(mount.daemonLog)")
        }
    }

    @Test func unmountAndMountAtOnceWaitsForTheDaemonThatIsFlushing() throws {
        let scratch = try ScratchMount(prefix: "cachefs-again")
        defer { scratch.finish() }
        let base = scratch.base
        let result = try Shell.bash("""
            set -e
            cd '\(base)'
            '\(MountedStore.executable)' mount store mnt -o min_free=0
            for round in 1 2 3 4; do
                for i in $(seq 200); do echo $round > mnt/data/f$i; done
                fusermount3 -u mnt && '\(MountedStore.executable)' mount store mnt -o min_free=0
                test "$(cat mnt/data/f200)" = $round
            done
            """)
        #expect(result.succeeded, "\(result.error)")
        #expect(!result.error.contains("already in use"), "\(result.error)")
    }

    @Test func theStoreGetsItsMissingParentsAndAMissingMountpointSaysWhatToDo() throws {
        let scratch = try ScratchMount(prefix: "cachefs-fresh", store: "home/.cache/store")
        defer { scratch.finish() }
        let base = scratch.base
        let missing = try cachefs("mount", base + "/home/.cache/store", base + "/nothere")
        #expect(missing.error == "cachefs: mountpoint \(base)/nothere does not exist (create it first: mkdir -p \(base)/nothere)\n")
        let mounted = try cachefs("mount", base + "/home/.cache/store", base + "/mnt", "-o", "min_free=0")
        #expect(mounted.succeeded, "\(mounted.error)")
        #expect(try Shell.run(["ls", base + "/mnt"]).output == "avatars\ndata\nthumbnails\n")
        #expect(try Shell.run(["fusermount3", "-u", base + "/mnt"]).succeeded)
    }

    @Test func cliMessagesNameWhatIsWrong() throws {
        try withMountedStore { mount in
            let missing = try cachefs("pin", mount.path("data/missing.bin"))
            #expect(missing.error == "cachefs: \(mount.path("data/missing.bin")): No such file or directory\n")
            let noPool = try cachefs("purge", mount.mountpoint, "nopool")
            #expect(noPool.error == "cachefs: \(mount.mountpoint): no pool named 'nopool' (pools: avatars, data, thumbnails)\n")
            let status = try cachefs("status", mount.path("data"))
            #expect(status.succeeded, "\(status.error)")
            #expect(status.output.contains("thumbnails"))
            // The budget is a count of entries, and the line says so.
            #expect(status.output.range(of: #"loaded entries \d+ of \d+ the memory budget allows"#,
                                        options: .regularExpression) != nil, "\(status.output)")
            let banana = try cachefs("set", mount.path("data"), "max_size", "banana")
            #expect(banana.status == 1)
            #expect(banana.error.contains("max_size 'banana' refused: expected bytes or a size such as 25M"), "\(banana.error)")
            #expect(try mount.xattr("data", "user.cache.max_size") == String(25 << 20))
            let unknown = try cachefs("set", mount.path("data"), "colour", "blue")
            #expect(unknown.error.contains("unknown setting 'colour'"), "\(unknown.error)")
            let outside = try cachefs("status", mount.directory)
            #expect(outside.error.contains("not inside a cachefs mount"), "\(outside.error)")
            // A pool named by its path, as `set` and `preview` take it, is missing as a pool.
            for command in [["set", mount.path("nopool"), "max_age", "7d"], ["preview", mount.path("nopool")]] {
                let missingPool = try Shell.run([MountedStore.executable] + command)
                #expect(missingPool.status == 1)
                #expect(missingPool.error == "cachefs: \(mount.mountpoint): no pool named 'nopool' (pools: avatars, data, thumbnails)\n")
            }
            // A setting given where it does not belong says where it does, and nothing changes.
            #expect(try Shell.run(["sh", "-c", "echo hi > \(mount.path("data/f"))"]).succeeded)
            let onFile = try cachefs("set", mount.path("data/f"), "max_size", "1M")
            #expect(onFile.status == 1)
            #expect(onFile.error == "cachefs: \(mount.path("data/f")): max_size is set on a pool directory (MOUNT/POOL), not on a file\n")
            let onPool = try cachefs("set", mount.path("data"), "min_free", "1G")
            #expect(onPool.error == "cachefs: \(mount.path("data")): min_free is set on the mount's root, not on a pool directory (MOUNT/POOL)\n")
            // A symlink is followed, as setxattr follows it: pinning a link pins its file.
            #expect(try Shell.run(["ln", "-s", "f", mount.path("data/link")]).succeeded)
            let throughLink = try cachefs("pin", mount.path("data/link"))
            #expect(throughLink.succeeded, "\(throughLink.error)")
            #expect(try mount.xattr("data/f", "user.cache.pinned") == "1")
            let readOnly = try cachefs("set", mount.path("data"), "hits", "3")
            #expect(readOnly.error == "cachefs: \(mount.path("data")): hits is read-only\n")
            #expect(try mount.xattr("data", "user.cache.max_size") == String(25 << 20))
        }
    }

    @Test func versionPrintsTheVersion() throws {
        let result = try cachefs("--version")
        #expect(result.succeeded)
        #expect(result.output == "0.9.0\n")
    }
}
