import Foundation
import Glibc
import Testing

/// Replacement policies on a real mount: `user.cache.eviction`, what each keeps, remounts,
/// `auto` and the what-if curve.
@Suite struct ReplacementPolicyTests {
    /// A pool of 20 files whose hot set of 5 was read, then a scan of 60 files never read.
    /// Returns how many of the hot set are still there once the pool is within its limit.
    private func hotFilesLeftAfterAScan(_ mount: MountedStore, remountingFirst: Bool = false) throws -> Int {
        for index in 1...5 { _ = try mount.mustSucceed("echo hot\(index) > data/h\(index)") }
        _ = try mount.mustSucceed("for round in 1 2; do cat data/h* > /dev/null; done")
        if remountingFirst { try mount.remount() }
        for batch in 0..<6 {
            _ = try mount.mustSucceed("for index in $(seq \(batch * 10 + 1) \(batch * 10 + 10)); do echo scan > data/s$index; done")
            // The evictor is asynchronous: each batch waits for it, as a slower reader would.
            let settled = try Shell.waitUntil(seconds: 10) {
                try (Int(mount.xattr("data", "user.cache.files")) ?? .max) <= 20
            }
            let files = try mount.xattr("data", "user.cache.files")
            #expect(settled, "files: \(files)")
        }
        let left = try mount.mustSucceed("ls data").split(separator: "\n")
        #expect(left.count <= 20, "\(left)")
        return left.filter { $0.hasPrefix("h") }.count
    }

    private func usePolicy(_ policy: String, in mount: MountedStore) throws {
        _ = try mount.mustSucceed("setfattr -n user.cache.max_files -v 20 data")
        _ = try mount.mustSucceed("setfattr -n user.cache.eviction -v \(policy) data")
    }

    @Test func underS3FIFOAScanOfNewFilesDoesNotFlushAReReadHotSet() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            try usePolicy("s3fifo", in: mount)
            #expect(try hotFilesLeftAfterAScan(mount) == 5)
            #expect(try mount.xattr("data", "user.cache.eviction") == "s3fifo")
        }
    }

    @Test func underLRUTheSameScanFlushesTheHotSet() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            try usePolicy("lru", in: mount)
            #expect(try hotFilesLeftAfterAScan(mount) == 0)
            // lru keeps its order in the index, nothing in memory; the simulations of a pool
            // with a limit do hold some.
            #expect(try mount.xattr("data", "user.cache.policy_memory_bytes") == "0")
            #expect((Int(try mount.xattr("data", "user.cache.simulation_memory_bytes")) ?? 0) > 0)
        }
    }

    @Test func thePolicyAndItsOrderSurviveARemount() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            try usePolicy("s3fifo", in: mount)
            // Rebuilt from the index at the next mount, the hot set is older than the scan
            // and in the main queue: the scan still passes through the small one.
            #expect(try hotFilesLeftAfterAScan(mount, remountingFirst: true) == 5)
            #expect(try mount.xattr("data", "user.cache.eviction") == "s3fifo")
            #expect(try mount.mustSucceed("cachefs_bin=\(MountedStore.executable); $cachefs_bin status . --json | grep -c '\"eviction\" : \"s3fifo\"'") == "1")
            // The policy built at the mount holds its residents in memory: at least a node
            // (24 bytes, `SegmentedList.StoredNode`) each.
            let node = 24
            let json = try mount.mustSucceed("\(MountedStore.executable) status . --json")
            let report = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let pool = (report?["pools"] as? [[String: Any]])?.first { $0["name"] as? String == "data" }
            let files = pool?["files"] as? Int ?? 0
            let policyMemory = pool?["policy_memory_bytes"] as? Int ?? 0
            let simulationMemory = pool?["simulation_memory_bytes"] as? Int ?? 0
            #expect(files > 0 && policyMemory >= files * node, "\(json)")
            #expect((Int(try mount.xattr("data", "user.cache.policy_memory_bytes")) ?? 0) >= files * node)
            #expect(simulationMemory > 0, "\(json)")
            // Prometheus shows the same two figures.
            let samples = MetricsTests.parse(try mount.mustSucceed("\(MountedStore.executable) status . --format prometheus"))
            #expect(samples["cachefs_pool_policy_memory_bytes{pool=\"data\"}"] == Double(policyMemory), "\(samples)")
            #expect(samples["cachefs_pool_simulation_memory_bytes{pool=\"data\"}"] == Double(simulationMemory), "\(samples)")
        }
    }

    /// A pinned new file in S3-FIFO's small queue, over the queue's 10 % of the bytes, does
    /// not stop eviction: the victims come from main, oldest first. Before, each eviction
    /// went round the small queue until its step budget ran out and chose nothing, so the
    /// pool stayed over its limit (and a preview stopped short).
    @Test func aPinnedNewFileInS3FIFOsSmallQueueDoesNotStopEviction() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.eviction -v s3fifo data")
            _ = try mount.mustSucceed("for i in 1 2 3 4 5 6 7 8 9; do head -c 102400 /dev/zero > data/old$i; done")
            // Rebuilt from the index at the mount, the nine are in main; the preview builds
            // the policy now, so the new file is heard by the built policy: the small queue.
            try mount.remount()
            func previewed() throws -> [Substring] {
                try mount.xattr("data", "user.cache.preview").split(separator: "\n")
            }
            #expect(try previewed().count == 9)
            _ = try mount.mustSucceed("touch data/new && setfattr -n user.cache.pinned -v 1 data/new")
            _ = try mount.mustSucceed("head -c 409600 /dev/zero > data/new")
            #expect(try previewed().count == 9, "the pinned file stays out, the nine stay in")
            // The limit (the mount's `--pool data=0` sets none) makes the evictor go.
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 1M data")
            let settled = try Shell.waitUntil(seconds: 10) {
                try (Int(mount.xattr("data", "user.cache.usage")) ?? .max) <= 1 << 20
            }
            let usage = try mount.xattr("data", "user.cache.usage")
            #expect(settled, "usage: \(usage)")
            let left = try mount.mustSucceed("ls data").split(separator: "\n").map(String.init)
            #expect(left.contains("new"))
            let oldLeft = left.filter { $0.hasPrefix("old") }.compactMap { Int($0.dropFirst(3)) }.sorted()
            #expect(oldLeft.count < 9 && oldLeft == Array((10 - oldLeft.count)...9), "\(left)")
        }
    }

    @Test func aBadEvictionValueIsRefusedWithEINVALAndChangesNothing() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.eviction -v sieve data")
            for bad in ["banana", "LRU", "", "s3fifo,lru"] {
                let refused = try mount.sh("setfattr -n user.cache.eviction -v '\(bad)' data")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(bad): \(refused)")
            }
            #expect(try mount.xattr("data", "user.cache.eviction") == "sieve")
            // `setfattr -x` goes back to the default.
            _ = try mount.mustSucceed("setfattr -x user.cache.eviction data")
            #expect(try mount.xattr("data", "user.cache.eviction") == "lru")
        }
    }

    /// Replays `lines` (a trace, `KEY,SIZE` each) through an `auto` pool on S3-FIFO until it
    /// runs another policy (60 s at most); returns that policy and the `policy-changed` event.
    private func replayUntilAutoLeavesS3FIFO(_ lines: [String], in mount: MountedStore) throws
        -> (active: String, change: Substring?, events: String) {
        try usePolicy("auto", in: mount)
        // A pool on LRU that chooses auto starts from S3-FIFO.
        #expect(try mount.xattr("data", "user.cache.eviction_active") == "s3fifo")
        let trace = mount.directory + "/trace.csv"
        try (lines.joined(separator: "\n") + "\n").write(toFile: trace, atomically: true, encoding: .utf8)
        var replayed: [String] = []
        let switched = Shell.waitUntil(seconds: 60) {
            do {
                let run = try Shell.run(["python3", ScriptHelper.path("replay_through_mount.py"), mount.path("data"),
                                         trace, "--pace-every", "10", "--pace-seconds", "0.02"])
                replayed.append("\(run.status): \(run.output.suffix(300))")
                return try mount.xattr("data", "user.cache.eviction_active") != "s3fifo"
            } catch {
                replayed.append("\(error)")
                return false
            }
        }
        let active = try mount.xattr("data", "user.cache.eviction_active")
        #expect(switched, "still \(active); replays: \(replayed)")
        #expect(try mount.xattr("data", "user.cache.eviction") == "auto")
        let events = try mount.events(waitingUpTo: 5) { $0.contains("\"event\":\"policy-changed\"") }
        return (active, events.split(separator: "\n").first { $0.contains("\"event\":\"policy-changed\"") }, events)
    }

    /// A loop over 30 files through a pool of 20: LRU and S3-FIFO never hit (each file is
    /// evicted just before its turn comes again); W-TinyLFU keeps part of the loop (newcomers
    /// no more frequent than its residents are turned away).
    @Test func autoLeavesS3FIFOOnALoopAndSaysWhy() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let (active, change, events) = try replayUntilAutoLeavesS3FIFO(
                (0..<60).flatMap { _ in (0..<30).map { "k\($0),64" } }, in: mount)
            #expect(active == "tinylfu")
            #expect(change?.contains("auto (goal files): s3fifo -> tinylfu; simulated hit ratios") == true,
                    "\(events.suffix(2000))")
            // The choice `auto` made is kept across a remount.
            try mount.remount()
            #expect(try mount.xattr("data", "user.cache.eviction_active") == active)
        }
    }

    /// Reads over 30 files from 64 bytes to 8 KiB through a pool of 20 files: with goal
    /// `files`, `auto` goes from S3-FIFO to GDSF at its first look, and says it was the sizes.
    @Test func autoStartsFromGDSFWhenFileSizesVary() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let (active, change, events) = try replayUntilAutoLeavesS3FIFO(
                (0..<20).flatMap { round in (0..<30).map { "k\(($0 * 7 + round) % 30),\(64 << ($0 % 8))" } }, in: mount)
            #expect(active == "gdsf")
            #expect(change?.contains("auto (goal files): s3fifo -> gdsf; file sizes vary") == true,
                    "\(events.suffix(2000))")
        }
    }

    @Test func aPoolRecordsItsAccessesForReplayWhenAsked() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            #expect(try mount.xattr("data", "user.cache.trace") == "0")
            _ = try mount.mustSucceed("echo one > data/secret-name-a; echo two > data/secret-name-b")
            _ = try mount.mustSucceed("setfattr -n user.cache.trace -v 1 data")
            // Two creates and three opens for reading after the switch: five lines.
            _ = try mount.mustSucceed("head -c 5000 /dev/zero > data/c; cat data/secret-name-a data/c data/c > /dev/null")
            _ = try mount.mustSucceed("echo three > data/d")
            let tracePath = mount.store + "/traces/data.csv"
            #expect(Shell.waitUntil(seconds: 5) {
                ((try? String(contentsOfFile: tracePath, encoding: .utf8)) ?? "").split(separator: "\n").count >= 5
            })
            let lines = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 5, "\(lines)")
            for line in lines {
                let fields = line.split(separator: ",")
                #expect(fields.count == 2 && fields[0].count == 16 && UInt64(fields[0], radix: 16) != nil
                        && Int64(fields[1]) != nil, "\(line)")
            }
            // The two reads of c name the same file; the trace never names one.
            #expect(lines[2].split(separator: ",")[0] == lines[3].split(separator: ",")[0])
            #expect(lines[3].hasSuffix(",5000"), "\(lines)")
            #expect(!(try String(contentsOfFile: tracePath, encoding: .utf8)).contains("secret"))
            // A file with a known miss cost: its line says it, with the operation left empty (get).
            _ = try mount.mustSucceed("setfattr -n user.cache.cost -v 300ms data/c; cat data/c > /dev/null")
            let withCost = try Shell.waitUntil(seconds: 5) {
                try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").count >= 6
            }
            let traced = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n")
            #expect(withCost && traced.count == 6 && traced[5] == lines[3] + ",,300", "\(traced)")
            _ = try mount.mustSucceed("setfattr -n user.cache.trace -v 0 data; cat data/c > /dev/null")
            try mount.remount()
            #expect(try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").count == 6)
            let bad = try mount.sh("setfattr -n user.cache.trace -v banana data")
            #expect(!bad.succeeded && bad.error.contains("Invalid argument"), "\(bad)")
        }
    }

    @Test func theWhatIfCurveAndTheRecentHitRatioAreShown() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 64K data")
            #expect(try mount.xattr("data", "user.cache.hit_ratio") == "")
            // 40 files of 4 KiB over a pool of 16 of them, read in a skewed order.
            let trace = mount.directory + "/skewed.csv"
            var generator = SystemRandomNumberGenerator()
            let lines = (0..<3000).map { _ in
                let rank = Int(pow(Double.random(in: 0..<1, using: &generator), 2.5) * 40)
                return "k\(rank),4096"
            }
            try (lines.joined(separator: "\n") + "\n").write(toFile: trace, atomically: true, encoding: .utf8)
            let replay = try Shell.run(["python3", ScriptHelper.path("replay_through_mount.py"), mount.path("data"), trace])
            #expect(replay.succeeded, "\(replay.error)")
            let measured = try #require(Double(try mount.xattr("data", "user.cache.hit_ratio")))
            #expect(measured > 0 && measured < 1, "\(measured)")
            let curve = try mount.xattr("data", "user.cache.hit_ratio_curve").split(separator: ",").map { pair in
                let parts = pair.split(separator: "=")
                return (size: Int64(parts[0]) ?? -1, ratio: Double(parts[1]) ?? -1)
            }
            #expect(curve.map(\.size) == [8192, 16384, 32768, 65536, 131072, 262144, 524288], "\(curve)")
            // LRU is a stack policy: a larger cache never hits less.
            for (smaller, larger) in zip(curve, curve.dropFirst()) {
                #expect(smaller.ratio <= larger.ratio + 0.000_001, "\(curve)")
            }
            // 40 files fit whole from 256 KiB on: only the first request of each misses.
            #expect(curve.last.map { $0.ratio > 0.95 } == true, "\(curve)")
            let status = try mount.mustSucceed("\(MountedStore.executable) status . --what-if")
            #expect(status.contains("data: estimated hit ratio by size (lru)") && status.contains("<- limit now"), "\(status)")
            let metrics = try mount.mustSucceed("\(MountedStore.executable) status . --format prometheus")
            #expect(metrics.contains("cachefs_pool_estimated_hit_ratio{pool=\"data\",size_bytes=\"65536\"}"), "\(metrics)")
        }
    }
}
