import Foundation
import Testing

/// `kernel_hits` where the kernel's inotify limits say no. Each case runs in a user namespace
/// of its own, whose limits (`/proc/sys/user/max_inotify_*`, which bind every namespace below
/// the one that sets them) are lowered there and nowhere else, so tests running beside it keep
/// theirs; the mount lives in the namespace's own mount namespace and goes with it.
@Suite struct KernelHitsLimitsTests {
    /// Runs `body` (bash, with `$M` the mountpoint and `$S` the store) against a mount made
    /// under the given limit; prints the daemon's output and log last, after a `--log--` line.
    private static func runLimited(_ limit: String, to value: Int, _ body: String) throws -> (output: String, log: String) {
        let script = """
            set -eu
            echo \(value) > /proc/sys/user/\(limit)
            T=$(mktemp -d /tmp/cachefs-limits.XXXXXX); S=$T/store; M=$T/mnt; mkdir $S $M
            # The daemon holds the store's flock until it has flushed and exits.
            finish() { fusermount3 -u $M 2>/dev/null || true; flock $S/lock true; echo --log--; cat $T/out $S/daemon.log 2>/dev/null || true; rm -rf $T; }
            trap finish EXIT
            '\(MountedStore.executable)' mount $S $M --pool data=0 > $T/out 2>&1 &
            for i in $(seq 100); do mountpoint -q $M && break; sleep 0.1; done
            mountpoint -q $M
            \(body)
            """
        let result = try Shell.run(["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private",
                                    "bash", "-c", script])
        let parts = result.output.components(separatedBy: "--log--\n")
        #expect(result.status == 0, "status \(result.status): \(result.output) \(result.error)")
        return (parts[0], parts.count > 1 ? parts[1] : "")
    }

    /// Past `max_user_watches`, a directory that cannot be watched is still served (its reads
    /// are right), one warning names the limit, and the directories watched before count on.
    /// Three watches: the mount's root, `data` and `data/a`; `data/b` gets none.
    @Test func aDirectoryPastTheWatchLimitIsServedWithOneWarningAndOthersCountOn() throws {
        let run = try Self.runLimited("max_inotify_watches", to: 3, """
            for d in a b c; do mkdir $M/data/$d; echo "content of $d" > $M/data/$d/f; done
            for d in a b c; do cat $M/data/$d/f; cat $M/data/$d/f; done
            echo "hits=$(getfattr --only-values -n user.cache.hits $M/data)"
            """)
        #expect(run.output.components(separatedBy: "\n").filter { $0.hasPrefix("content of") }
            == ["content of a", "content of a", "content of b", "content of b", "content of c", "content of c"])
        #expect(run.output.contains("hits=2\n"), "only data/a is watched: \(run.output)")
        let warnings = run.log.components(separatedBy: "\n").filter { $0.contains("cannot watch directory") }
        #expect(warnings.count == 1, "\(run.log)")
        #expect(warnings.first?.contains("fs.inotify.max_user_watches") == true)
    }

    /// With no inotify instance at all, the mount says so and serves every open itself, as
    /// with `kernel_hits=off`: every read is still counted.
    @Test func withoutAnInotifyInstanceEveryOpenGoesThroughTheDaemonAndCounts() throws {
        let run = try Self.runLimited("max_inotify_instances", to: 0, """
            mkdir $M/data/a; echo content > $M/data/a/f
            for i in 1 2 3; do cat $M/data/a/f; done
            echo "hits=$(getfattr --only-values -n user.cache.hits $M/data)"
            """)
        #expect(run.output.components(separatedBy: "\n").filter { $0 == "content" }.count == 3)
        #expect(run.output.contains("hits=3\n"), "\(run.output)")
        #expect(run.log.contains("refused an inotify instance") && run.log.contains("fs.inotify.max_user_instances"),
                "\(run.log)")
    }
}
