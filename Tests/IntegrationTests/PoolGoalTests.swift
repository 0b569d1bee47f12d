import Foundation
import Glibc
import Testing

/// `user.cache.goal` on a pool and `user.cache.cost` on a file, on a real mount: set, shown,
/// refused, kept across a remount, and what `gdsf` keeps under each goal.
@Suite struct PoolGoalTests {
    @Test(arguments: StoreKind.allCases)
    func theGoalIsSetShownRefusedWhenBadAndKeptAcrossARemount(kind: StoreKind) throws {
        try withMountedStore(arguments: ["--pool", "data=1M"], kind: kind) { mount in
            #expect(try mount.xattr("data", "user.cache.goal") == "files")
            _ = try mount.mustSucceed("setfattr -n user.cache.goal -v bytes data")
            for bad in ["objects", "BYTES", "", "files,bytes"] {
                let refused = try mount.sh("setfattr -n user.cache.goal -v '\(bad)' data")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(bad): \(refused)")
            }
            // An encrypted store's log seals the value and the reason.
            #expect(mount.daemonLog.contains(kind == .plaintext
                ? "refused user.cache.goal=objects: expected one of files, bytes, cost" : "refused user.cache.goal=sealed:"))
            #expect(try mount.xattr("data", "user.cache.goal") == "bytes")
            try mount.remount()
            #expect(try mount.xattr("data", "user.cache.goal") == "bytes")
            let json = try mount.mustSucceed("\(MountedStore.executable) status . --json")
            let report = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let data = try #require((report?["pools"] as? [[String: Any]])?.first { $0["name"] as? String == "data" })
            #expect(data["goal"] as? String == "bytes", "\(json)")
            #expect(try mount.mustSucceed("\(MountedStore.executable) status . | grep '^data '").contains(" bytes "))
            _ = try mount.mustSucceed("setfattr -x user.cache.goal data")
            #expect(try mount.xattr("data", "user.cache.goal") == "files")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aFilesCostIsSetShownRefusedWhenBadAndKeptAcrossARemount(kind: StoreKind) throws {
        try withMountedStore(kind: kind) { mount in
            _ = try mount.mustSucceed("echo thumbnail > data/t.jpg")
            #expect(try mount.xattr("data/t.jpg", "user.cache.cost") == "0")
            _ = try mount.mustSucceed("setfattr -n user.cache.cost -v 300ms data/t.jpg")
            #expect(try mount.xattr("data/t.jpg", "user.cache.cost") == "300")
            for bad in ["-5", "-5ms", "", "slow", "3h", "1e3"] {
                let refused = try mount.sh("setfattr -n user.cache.cost -v '\(bad)' data/t.jpg")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(bad): \(refused)")
            }
            #expect(try mount.xattr("data/t.jpg", "user.cache.cost") == "300")
            // A pool directory has no cost of its own.
            #expect(!(try mount.sh("setfattr -n user.cache.cost -v 5 data").succeeded))
            _ = try mount.mustSucceed("setfattr -n user.cache.cost -v 2s data/t.jpg")
            try mount.remount()
            #expect(try mount.xattr("data/t.jpg", "user.cache.cost") == "2000")
        }
    }

    private func useGDSF(goal: String, policy: String = "gdsf", in mount: MountedStore) throws {
        _ = try mount.mustSucceed("setfattr -n user.cache.eviction -v \(policy) data && setfattr -n user.cache.goal -v \(goal) data")
    }

    /// One file of 200 KiB read three times beside five of 10 KiB read once, in a `gdsf`
    /// pool, which then shrinks to 230 KiB (so a pass brings it to 207 KiB). Under `files`
    /// the large file goes (it costs one miss, as a small one does, and holds 20 times the
    /// bytes); under `bytes` each byte is worth the same, and the small files, read less,
    /// go. Returns the files left.
    private func filesLeftAfterTheLimitShrinks(goal: String, policy: String = "gdsf") throws -> [String] {
        var left: [String] = []
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            try useGDSF(goal: goal, policy: policy, in: mount)
            #expect(try mount.xattr("data", "user.cache.eviction") == policy)
            _ = try mount.mustSucceed("head -c 200K /dev/urandom > data/large")
            _ = try mount.mustSucceed("for index in 1 2 3 4 5; do head -c 10K /dev/urandom > data/small$index; done")
            _ = try mount.mustSucceed("for round in 1 2 3; do cat data/large > /dev/null; done; cat data/small* > /dev/null")
            #expect(try mount.xattr("data", "user.cache.hits") == "8")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 230K data")
            let settled = try Shell.waitUntil(seconds: 10) {
                (Int(try mount.xattr("data", "user.cache.usage")) ?? .max) <= 230 * 1024
            }
            let usage = try mount.xattr("data", "user.cache.usage")
            #expect(settled, "usage: \(usage)")
            left = try mount.mustSucceed("ls data").split(separator: "\n").map(String.init)
            let reason = policy == "gdsf" ? "gdsf (goal \(goal))" : "\(policy): lowest frequency / size"
            let events = try mount.events(waitingUpTo: 5) { $0.contains(reason) }
            #expect(events.contains(reason), "\(events)")
        }
        return left
    }

    @Test func underGoalFilesGDSFGivesUpTheLargeFileFirst() throws {
        #expect(try filesLeftAfterTheLimitShrinks(goal: "files") == ["small1", "small2", "small3", "small4", "small5"])
    }

    @Test func underGoalBytesGDSFKeepsTheLargeFileReadMost() throws {
        #expect(try filesLeftAfterTheLimitShrinks(goal: "bytes") == ["large"])
    }

    /// `gdsf-files` weighs every miss as 1 whatever the goal: under `bytes` too, the large
    /// file goes first.
    @Test func underGoalBytesGDSFFilesGivesUpTheLargeFileFirst() throws {
        #expect(try filesLeftAfterTheLimitShrinks(goal: "bytes", policy: "gdsf-files")
            == ["small1", "small2", "small3", "small4", "small5"])
    }

    /// Two files of one size from an `exec:` origin, `sleepy` taking half a second to
    /// fetch and `quick` a few milliseconds, each read once, then the pool shrinks to hold
    /// one. Both fetches recorded their time as the file's cost; under `cost` the quick one
    /// goes, under `files` (equal sizes, equal reads) the one read first: `sleepy`.
    private func fileLeftOfTwoFetched(goal: String) throws -> [String] {
        var left: [String] = []
        try withOriginMount("exec", arguments: ["--pool", "data=0"], prepare: { try $0.write("quick", bytes: 1000) }) {
            mount, _ in
            try useGDSF(goal: goal, in: mount)
            _ = try mount.mustSucceed("cat data/sleepy > /dev/null; cat data/quick > /dev/null")
            let slow = try #require(Int(try mount.xattr("data/sleepy", "user.cache.cost")))
            let quick = try #require(Int(try mount.xattr("data/quick", "user.cache.cost")))
            #expect(slow >= 500 && quick >= 1 && quick < slow, "sleepy \(slow) ms, quick \(quick) ms")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 1500 data")
            let settled = try Shell.waitUntil(seconds: 10) {
                (Int(try mount.xattr("data", "user.cache.usage")) ?? .max) <= 1500
            }
            let usage = try mount.xattr("data", "user.cache.usage")
            #expect(settled, "usage: \(usage)")
            left = try mount.mustSucceed("ls data").split(separator: "\n").map(String.init)
        }
        return left
    }

    @Test func underGoalCostAFileSlowToFetchOutlastsAQuickOne() throws {
        #expect(try fileLeftOfTwoFetched(goal: "cost") == ["sleepy"])
    }

    @Test func underGoalFilesTheSameTwoGoInTheOrderTheyCame() throws {
        #expect(try fileLeftOfTwoFetched(goal: "files") == ["quick"])
    }

    /// A hit weighs its file's bytes, a miss the pool's average file: two hits of 30 KiB
    /// and one miss while the pool's files average 20 KiB give 60 / 80.
    @Test func theByteHitRatioWeighsHitsByTheirBytes() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("head -c 30K /dev/urandom > data/big; head -c 10K /dev/urandom > data/little")
            _ = try mount.mustSucceed("cat data/big data/big > /dev/null")
            #expect(!(try mount.sh("cat data/absent").succeeded))
            #expect(try mount.xattr("data", "user.cache.hit_ratio") == "0.667")
            #expect(try mount.xattr("data", "user.cache.byte_hit_ratio") == "0.750")
            let samples = MetricsTests.parse(try mount.mustSucceed("\(MountedStore.executable) status . --format prometheus"))
            #expect(samples["cachefs_pool_byte_hit_ratio{pool=\"data\"}"] == 0.75, "\(samples)")
        }
    }
}
