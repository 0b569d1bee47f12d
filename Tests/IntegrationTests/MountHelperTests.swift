import Foundation
import Testing

/// `mount -t fuse.cachefs` and /etc/fstab lines, through util-linux's mount(8) and Debian's
/// `mount.fuse3`, which runs `cachefs STORE MOUNT -o OPTIONS`.
@Suite struct MountHelperTests {
    /// A temporary store, mountpoint and helper folder, and a script runner: each script runs in
    /// a private mount namespace where /usr/local/sbin holds only a `cachefs` link to the built
    /// binary (mount(8) starts mount.fuse3 without PATH, and /bin/sh's default path begins
    /// there), so the host's folders stay as they are. On exit the script unmounts, if it
    /// must, and waits for the daemon to end.
    struct Sandbox: ~Copyable {
        let directory: String
        var store: String { directory + "/store" }
        var mountpoint: String { directory + "/mnt" }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-it-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory + "/helper-bin", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: directory + "/helper-bin/cachefs",
                                                       withDestinationPath: MountedStore.executable)
        }

        /// Runs `script` (bash, with `$store`, `$mnt`, `$dir` and `$daemon`, a pgrep pattern, set).
        func run(_ script: String) throws -> CommandResult {
            let prologue = """
                dir='\(directory)'; store='\(store)'; mnt='\(mountpoint)'
                # The daemon's command line; the script's own text never holds it expanded.
                daemon="cachefs $store $mnt"
                finish() {
                    status=$?
                    if grep -q " $mnt " /proc/self/mounts; then fusermount3 -uz "$mnt"; fi
                    for _ in $(seq 150); do pgrep -f -- "$daemon" > /dev/null || break; sleep 0.1; done
                    if pgrep -f -- "$daemon" > /dev/null; then echo "daemon still running" >&2; pkill -KILL -f -- "$daemon"; exit 99; fi
                    exit $status
                }
                trap finish EXIT
                mount --bind "$dir/helper-bin" /usr/local/sbin || exit 98

                """
            return try Shell.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", prologue + script])
        }

        var daemonLog: String {
            (try? String(contentsOfFile: store + "/daemon.log", encoding: .utf8)) ?? "(no daemon log)"
        }

        deinit {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Prints `name=value` lines for the Swift side to check.
    private func values(_ result: CommandResult) -> [String: String] {
        var found: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            found[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return found
    }

    @Test func fstabLineMountsWithPoolsAndIgnoresMountAndSystemdWords() throws {
        let sandbox = try Sandbox()
        let options = "noauto,nofail,_netdev,user,nodev,nosuid,x-systemd.requires=network.target,comment=cachefs,"
            + "pool=data:1M,pool=avatars:2M:7d,min_free=0,log_level=debug"
        let script = """
            echo "$store $mnt fuse.cachefs \(options) 0 0" > "$dir/fstab"
            sed 's/noauto,//' "$dir/fstab" > "$dir/fstab-auto"
            mount -T "$dir/fstab" "$mnt" || exit 1
            echo "source=$(findmnt -n -o SOURCE "$mnt")"
            echo "type=$(findmnt -n -o FSTYPE "$mnt")"
            echo "options=$(findmnt -n -o OPTIONS "$mnt")"
            echo hello > "$mnt/data/greeting" && echo "read=$(cat "$mnt/data/greeting")"
            echo "data_max_size=$(getfattr --only-values -n user.cache.max_size "$mnt/data")"
            echo "avatars_max_size=$(getfattr --only-values -n user.cache.max_size "$mnt/avatars")"
            echo "avatars_max_age=$(getfattr --only-values -n user.cache.max_age "$mnt/avatars")"
            mount -a -T "$dir/fstab-auto"; echo "mount_all_again=$?"
            umount "$mnt"; echo "umount=$?"
            """
        let result = try sandbox.run(script)
        #expect(result.succeeded, "\(result.error)\n\(sandbox.daemonLog)")
        let found = values(result)
        #expect(found["source"] == sandbox.store)
        #expect(found["type"] == "fuse.cachefs")
        // `user` implies noexec, nosuid and nodev, which mount(8) passes on.
        let flags = Set((found["options"] ?? "").split(separator: ",").map(String.init))
        #expect(flags.isSuperset(of: ["rw", "nodev", "nosuid", "noexec"]), "\(flags)")
        #expect(found["read"] == "hello")
        #expect(found["data_max_size"] == String(1 << 20))
        #expect(found["avatars_max_size"] == String(2 << 20))
        #expect(found["avatars_max_age"] == String(7 * 86400))
        // A line that is mounted already is recognised by its source and left alone.
        #expect(found["mount_all_again"] == "0", "\(result.error)")
        #expect(found["umount"] == "0", "\(result.error)")
    }

    @Test func mountTypeFuseCachefsPassesKernelFlagsAndPersistsPools() throws {
        let sandbox = try Sandbox()
        let script = """
            mount -t fuse.cachefs "$store" "$mnt" -o ro,noexec,defaults,x-systemd.automount,pool=thumbnails:3M,min_free=0 || exit 1
            echo "options=$(findmnt -n -o OPTIONS "$mnt")"
            echo "write_to_ro=$(touch "$mnt/data/file" 2>&1)"
            umount "$mnt" || exit 2
            for _ in $(seq 150); do pgrep -f -- "$daemon" > /dev/null || break; sleep 0.1; done
            mount -t fuse.cachefs "$store" "$mnt" -o min_free=0 || exit 3
            echo "options_rw=$(findmnt -n -o OPTIONS "$mnt")"
            echo cached > "$mnt/data/file" && echo "read=$(cat "$mnt/data/file")"
            echo "thumbnails_max_size=$(getfattr --only-values -n user.cache.max_size "$mnt/thumbnails")"
            umount "$mnt"; echo "umount=$?"
            """
        let result = try sandbox.run(script)
        #expect(result.succeeded, "\(result.error)\n\(sandbox.daemonLog)")
        let found = values(result)
        let flags = Set((found["options"] ?? "").split(separator: ",").map(String.init))
        #expect(flags.isSuperset(of: ["ro", "noexec"]), "\(flags)")
        #expect(found["write_to_ro"]?.contains("Read-only file system") == true, "\(found)")
        // mount.fuse3 adds dev and suid to a line without nodev/nosuid; cachefs stays nodev,nosuid.
        let rwFlags = Set((found["options_rw"] ?? "").split(separator: ",").map(String.init))
        #expect(rwFlags.isSuperset(of: ["rw", "nodev", "nosuid"]) && !rwFlags.contains("noexec"), "\(rwFlags)")
        #expect(found["read"] == "cached")
        #expect(found["thumbnails_max_size"] == String(3 << 20), "the pool set by -o at the first mount was not kept")
        #expect(found["umount"] == "0")
    }

    @Test func helperFormRefusesBadOptionsAndLeavesMistypedCommandsAlone() throws {
        let sandbox = try Sandbox()
        let cachefs = MountedStore.executable
        let badPool = try Shell.run([cachefs, sandbox.store, sandbox.mountpoint, "-o", "pool=data"])
        #expect(badPool.status == 64 && badPool.error.contains("pool=NAME:SIZE[:AGE]"), "\(badPool.error)")
        let unknown = try Shell.run([cachefs, sandbox.store, sandbox.mountpoint, "-o", "rw,colour=blue"])
        #expect(unknown.status == 64 && unknown.error.contains("unknown mount option 'colour=blue'"), "\(unknown.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.store), "a refused mount created the store")
        // A mistyped subcommand is not a store: it stays an error and creates nothing.
        let typo = try Shell.bash("cd '\(sandbox.directory)' && '\(cachefs)' stauts '\(sandbox.mountpoint)'")
        #expect(typo.status == 64 && typo.error.contains("stauts"), "\(typo.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.directory + "/stauts"))
        #expect(!NotifyListener.isMounted(sandbox.mountpoint))
    }
}
