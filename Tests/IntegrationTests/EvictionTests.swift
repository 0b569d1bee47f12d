import Foundation
import Glibc
import Testing

@Suite struct EvictionTests {
    /// With the kernel serving hits (the default: each read counted from its close event,
    /// which the eviction pass reads first) and with `kernel_hits=off` (counted at OPEN).
    @Test(arguments: [[], ["-o", "kernel_hits=off"]])
    func leastRecentlyReadGoFirstAndUsageEndsUnderTheWatermark(options: [String]) throws {
        try withMountedStore(arguments: ["--pool", "data=1M"] + options) { mount in
            for index in 1...8 { _ = try mount.mustSucceed("head -c 100000 /dev/urandom > data/f\(index)") }
            // Reading f1 and f2 makes them the most recently used.
            _ = try mount.mustSucceed("cat data/f1 data/f2 > /dev/null")
            // f11 takes the pool over 1 MiB: the evictor brings it to 90% (how soon is the bench's
            // engine row, eviction of 10,000 files after max_size drops).
            for index in 9...11 { _ = try mount.mustSucceed("head -c 100000 /dev/urandom > data/f\(index)") }
            let settled = try Shell.waitUntil(seconds: 10) {
                try (Int(mount.xattr("data", "user.cache.usage")) ?? .max) <= (1 << 20) * 9 / 10
            }
            let usageNow = try mount.xattr("data", "user.cache.usage")
            #expect(settled, "usage still \(usageNow)")
            let left = Set(try mount.mustSucceed("ls data").split(separator: "\n").map(String.init))
            #expect(left.isSuperset(of: ["f1", "f2", "f11"]), "\(left)")
            #expect(!left.contains("f3") && !left.contains("f4"), "\(left)")
            let sizes = try mount.mustSucceed("stat -c %s data/* | awk '{s+=$1} END {print s}'")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            #expect(Int(try mount.xattr("data", "user.cache.evicted_files")) == 11 - left.count)
            #expect(try mount.xattr("data", "user.cache.hits") == "2")
        }
    }

    @Test func maxFilesHoldsLikeMaxSize() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_files -v 4 data")
            // The fifth file crosses the limit; eviction goes down to 90% of 4, that is 3 files.
            for index in 1...5 { _ = try mount.mustSucceed("echo \(index) > data/f\(index)") }
            let settled = try Shell.waitUntil(seconds: 5) { try mount.xattr("data", "user.cache.files") == "3" }
            let listing = try mount.mustSucceed("ls data | tr '\\n' ' '")
            let files = try mount.xattr("data", "user.cache.files")
            #expect(settled, "files \(files), listing \(listing), daemon log:\n\(mount.daemonLog)")
            #expect(listing == "f3 f4 f5", "files \(files), daemon log:\n\(mount.daemonLog)")
        }
    }

    @Test func aFileOlderThanMaxAgeGoesAtTheSweepAndIsNeverServed() throws {
        try withMountedStore(arguments: ["--pool", "data=0,1s", "-o", "sweep_interval=0.3"]) { mount in
            _ = try mount.mustSucceed("echo old > data/f")
            var listing = try mount.sh("ls data")
            #expect(try Shell.waitUntil(seconds: 3) {
                listing = try mount.sh("ls data")
                return listing.succeeded && listing.output.isEmpty
            }, "\(listing)")
            let events = try mount.events(waitingUpTo: 2) { $0.contains("\"event\":\"expired\"") }
            #expect(events.contains("\"event\":\"expired\""), "events.jsonl: \(events)")
        }
        // Without a sweep in time, a lookup or an open of an expired file answers ENOENT.
        try withMountedStore(arguments: ["--pool", "data=0,1s"]) { mount in
            _ = try mount.mustSucceed("echo old > data/f && cat data/f >/dev/null")
            let gone = try mount.sh("sleep 1.3; cat data/f")
            #expect(!gone.succeeded && gone.error.contains("No such file"), "\(gone)")
        }
    }

    /// The kernel keeps a name and its attributes no longer than the file has left, so `stat`,
    /// which the kernel answers from its caches without asking the daemon, stops finding an
    /// expired file at its expiry, not at the next sweep (60 s here).
    @Test func theKernelForgetsAFileAtItsExpiry() throws {
        try withMountedStore(arguments: ["--pool", "data=0,2s"]) { mount in
            _ = try mount.mustSucceed("echo old > data/f && stat data/f > /dev/null")
            _ = try mount.mustSucceed("echo kept > data/g && setfattr -n user.cache.expiration -v 1h data/g")
            let before = try mount.sh("stat -c %s data/f")
            #expect(before.succeeded && before.output.trimmingCharacters(in: .whitespacesAndNewlines) == "4", "\(before)")
            let gone = try mount.sh("sleep 2.3; stat data/f")
            #expect(!gone.succeeded && gone.error.contains("No such file"), "\(gone)")
            // A file with an hour left is still there, its name still known to the kernel.
            #expect(try mount.mustSucceed("stat -c %s data/g") == "5")
        }
    }

    @Test func ageBasisModificationAndPerFileExpiration() throws {
        try withMountedStore(arguments: ["--pool", "data=0,1h"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.age_basis -v modification data")
            _ = try mount.mustSucceed("echo a > data/stale && touch -d '3 hours ago' data/stale && echo b > data/fresh")
            _ = try mount.mustSucceed("cat data/stale data/fresh > /dev/null; setfattr -n user.cache.purge -v 1 data")
            #expect(try mount.mustSucceed("ls data") == "fresh")
            // A file's own expiration overrides the pool's.
            _ = try mount.mustSucceed("echo c > data/short && setfattr -n user.cache.expiration -v 1s data/short")
            #expect(try mount.xattr("data/short", "user.cache.expires_at") != "")
            _ = try mount.mustSucceed("sleep 1.3; setfattr -n user.cache.purge -v 1 data")
            #expect(try mount.mustSucceed("ls data") == "fresh")
        }
    }

    @Test func aPinLeaseEndsOnTimeAndTheFileBecomesEvictable() throws {
        try withMountedStore(arguments: ["--pool", "data=300K"]) { mount in
            _ = try mount.mustSucceed("head -c 100000 /dev/zero > data/leased && setfattr -n user.cache.pinned -v 2s data/leased")
            #expect(try mount.xattr("data/leased", "user.cache.state") == "pinned")
            for index in 1...3 { _ = try mount.mustSucceed("head -c 100000 /dev/zero > data/f\(index)") }
            #expect(try Shell.waitUntil(seconds: 5) { try !mount.sh("test -e data/f1").succeeded })
            #expect(try mount.mustSucceed("test -e data/leased && echo yes") == "yes")
            _ = try mount.mustSucceed("sleep 2.2")
            #expect(try mount.xattr("data/leased", "user.cache.state") == "cached")
            // Over the limit again: the leased file is now the least recently used.
            _ = try mount.mustSucceed("head -c 100000 /dev/zero > data/f4 && head -c 100000 /dev/zero > data/f5")
            #expect(try Shell.waitUntil(seconds: 5) { try !mount.sh("test -e data/leased").succeeded })
        }
    }

    @Test func pinnedAndPersistentSurviveEverythingButRm() throws {
        try withMountedStore(arguments: ["--pool", "data=200K,1s"]) { mount in
            _ = try mount.mustSucceed("mkdir data/keep data/hold && setfattr -n user.cache.persistent -v 1 data/keep && setfattr -n user.cache.pinned -v 1 data/hold")
            _ = try mount.mustSucceed("head -c 150000 /dev/zero > data/keep/p && head -c 50000 /dev/zero > data/hold/q")
            #expect(try mount.xattr("data/keep/p", "user.cache.state") == "persistent")
            #expect(try mount.xattr("data/hold/q", "user.cache.state") == "pinned")
            #expect(try mount.xattr("data", "user.cache.usage") == "50000")
            #expect(try mount.xattr("data", "user.cache.persistent_usage") == "150000")
            for index in 1...4 { _ = try mount.mustSucceed("head -c 60000 /dev/zero > data/c\(index)") }
            _ = try mount.mustSucceed("sleep 1.2; setfattr -n user.cache.purge -v 1 data; setfattr -n user.cache.clear -v 1 data")
            #expect(try mount.mustSucceed("find data -type f | sort | tr '\\n' ' '") == "data/hold/q data/keep/p")
            _ = try mount.mustSucceed("rm data/keep/p data/hold/q")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            #expect(try mount.xattr("data", "user.cache.persistent_usage") == "0")
        }
    }

    @Test func anOpenFileSurvivesEvictionUntilItsReaderCloses() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("head -c 500000 /dev/urandom > data/big")
            let expected = try mount.mustSucceed("sha256sum < data/big")
            let script = """
                exec 3< data/big
                setfattr -n user.cache.clear -v 1 data
                # The kernel hears of the removal from the notification thread, a moment later.
                for _ in $(seq 200); do test -e data/big || break; sleep 0.01; done
                test ! -e data/big || echo STILL-LISTED
                getfattr --only-values -n user.cache.pending_usage data; echo
                sha256sum <&3
                exec 3<&-
                """
            let lines = try mount.mustSucceed(script).split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(lines)")
            #expect(lines.first == "500000")
            #expect(lines.last == expected)
            #expect(try Shell.waitUntil(seconds: 10) { try mount.xattr("data", "user.cache.pending_usage") == "0" })
            #expect(try mount.objectFilesLeft(waitingUpTo: 5) == 0, "stored objects left after the last close")
        }
    }

    /// The growing file counts in usage, so it may evict older unpinned files on its way to
    /// max_size (LRU as usual); pinned files stay, and the write past max_size is EFBIG.
    @Test func aCachedFileLargerThanThePoolIsEFBIGAndNothingElseIsLost() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("echo small > data/keep && setfattr -n user.cache.pinned -v 1 data/keep")
            let big = try mount.sh("head -c 2000000 /dev/zero > data/big")
            #expect(!big.succeeded && big.error.contains("File too large"), "\(big.error)")
            #expect(try mount.mustSucceed("ls data") == "keep")
            #expect(try mount.xattr("data", "user.cache.usage") == "6")
            // Under a persistent directory there is no such limit.
            _ = try mount.mustSucceed("mkdir data/p && setfattr -n user.cache.persistent -v 1 data/p && head -c 2000000 /dev/zero > data/p/big")
        }
    }

    /// The kernel raises IN_DELETE_SELF on the evicted file (FUSE's notify_delete does not
    /// raise IN_DELETE on the directory; see docs/metrics-and-events.md).
    @Test func inotifySeesAnEvictionAndLsNeverListsIt() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("echo x > data/victim && ls -l data/victim >/dev/null")
            let script = """
                inotifywait -q -m -e delete_self --format '%e %w' data/victim > '\(mount.directory)/inotify.log' 2>/dev/null &
                watcher=$!
                sleep 0.5
                setfattr -n user.cache.clear -v 1 data
                ls data
                for i in $(seq 50); do grep -q DELETE_SELF '\(mount.directory)/inotify.log' && break; sleep 0.1; done
                kill $watcher
                """
            #expect(try mount.mustSucceed(script) == "")
            let seen = try String(contentsOfFile: mount.directory + "/inotify.log", encoding: .utf8)
            #expect(seen.contains("DELETE_SELF data/victim"), "inotify saw: \(seen)")
        }
    }

    @Test func policyChangesSurviveRemountAndBadValuesKeepTheOld() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 3M data && setfattr -n user.cache.max_age -v 12h data")
            for bad in ["max_size lots", "max_size -5", "max_age forever", "age_basis birth", "max_files -1", "low_watermark 0"] {
                let parts = bad.split(separator: " ")
                #expect(!(try mount.sh("setfattr -n user.cache.\(parts[0]) -v \(parts[1]) data")).succeeded, "\(bad)")
            }
            try mount.remount()
            #expect(try mount.xattr("data", "user.cache.max_size") == String(3 << 20))
            #expect(try mount.xattr("data", "user.cache.max_age") == "43200")
            #expect(try mount.xattr("data", "user.cache.age_basis") == "access")
        }
    }

    @Test func eventsHaveOneWellFormedLinePerRemoval() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("mkdir data/d && echo 1 > data/d/a && echo 22 > data/b && rm data/b")
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            let lines = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
                .split(separator: "\n")
            let events = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
            #expect(events.count == 2)
            #expect(events.first?["event"] as? String == "deleted")
            #expect(events.first?["path"] as? String == "data/b")
            #expect(events.first?["size"] as? Int == 3)
            #expect(events.last?["event"] as? String == "cleared")
            #expect(events.last?["path"] as? String == "data/d/a")
            #expect(events.allSatisfy { $0["time"] is String && $0["pool"] as? String == "data" && $0["reason"] is String })
        }
    }
}
