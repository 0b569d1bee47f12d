import Foundation
import Testing

/// `cachefs replay`, offline, on traces small enough to count by hand.
@Suite struct ReplayCommandTests {
    private func replay(_ trace: String, _ arguments: String...) throws -> CommandResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("trace.csv").path
        try trace.write(toFile: path, atomically: true, encoding: .utf8)
        return try Shell.run([MountedStore.executable, "replay", path] + arguments)
    }

    /// Room for two files; reads a b c a b c a. LRU: each read evicts the file read next, 0
    /// hits. Belady keeps a and b (c is read again later than both): a, b and the last a hit,
    /// 3 of 7. SIEVE: nothing is read again before it has to go, so like LRU. S3-FIFO fills
    /// from cold as libCacheSim's does: a enters the small queue, which then holds its share,
    /// so b and c go to main; the first eviction takes a from the small queue (a ghost), so a
    /// comes back to main and b (main's oldest, unread) goes; b, no ghost, enters the small
    /// queue and goes at once; then c and a hit in main: 2 hits. W-TinyLFU (a window of one): when c comes, b leaves the window as the one candidate
    /// waiting (a, which left before while there was room, is established in probation);
    /// tied with a, b goes, so a's second read hits and promotes it. Later newcomers lose to
    /// a (read twice) or tie it, and go: a's third read hits too, 2 hits. GDSF (cost 1, one
    /// room each): every newcomer enters at the clock plus 1 and the oldest of equal
    /// priority goes, as LRU: 0 hits.
    @Test func aTinyTracePrintsTheHandCountedHitRatios() throws {
        let result = try replay("key,size\na,10\nb,10\nc,10\na,10\nb,10\nc,10\na,10\n",
                                "--objects", "--size", "2", "--json", "--no-auto")
        #expect(result.succeeded, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(report["requests"] as? Int == 7 && report["distinct_keys"] as? Int == 3)
        let rows = report["rows"] as? [[String: Any]] ?? []
        let hits = Dictionary(uniqueKeysWithValues: rows.map { ($0["policy"] as? String ?? "", $0["hits"] as? Int ?? -1) })
        #expect(hits == ["lru": 0, "s3fifo": 2, "sieve": 0, "tinylfu": 2, "gdsf": 0, "belady": 3], "\(rows)")
        let belady = try #require(rows.first { $0["policy"] as? String == "belady" })
        #expect(abs((belady["object_hit_ratio"] as? Double ?? 0) - 3.0 / 7) < 1e-9)
    }

    /// Sizes in bytes: 4 KiB of room for files of 4 KiB and 8 KiB. The big file never fits
    /// (every read of it misses, and costs its 8 KiB in the byte ratio); x alone fits.
    @Test func byteSizesAndTheByteHitRatio() throws {
        let result = try replay("x,4096\nbig,8192\nx,4096\nbig,8192\nx,4096\n", "--size", "4K", "--policy", "lru",
                                "--json", "--no-auto")
        #expect(result.succeeded, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        let rows = report["rows"] as? [[String: Any]] ?? []
        let lru = try #require(rows.first { $0["policy"] as? String == "lru" })
        #expect(lru["hits"] as? Int == 2)
        // 8 KiB hit of 28 KiB requested.
        #expect(abs((lru["byte_hit_ratio"] as? Double ?? 0) - 8192.0 / 28672) < 1e-9, "\(lru)")
    }

    @Test func badTracesAndOptionsSayWhatIsWrongInOneLine() throws {
        let badLine = try replay("a,1\nb,oops\n")
        #expect(!badLine.succeeded && badLine.error.contains("line 2: size oops is not a number of bytes"), "\(badLine)")
        let badPolicy = try replay("a,1\n", "--policy", "fifo")
        #expect(!badPolicy.succeeded && badPolicy.error.contains("unknown policy fifo"), "\(badPolicy)")
        let badSize = try replay("a,1\n", "--size", "lots")
        #expect(!badSize.succeeded && badSize.error.contains("bad size lots"), "\(badSize)")
        let missing = try Shell.run([MountedStore.executable, "replay", "/nonexistent/trace.csv"])
        #expect(!missing.succeeded && missing.error.contains("cannot read /nonexistent/trace.csv"), "\(missing)")
        let badCost = try replay("a,1,get,5\nb,2,get,300ms\n")
        #expect(!badCost.succeeded && badCost.error.contains("line 2: cost 300ms is not a number of milliseconds"),
                "\(badCost)")
        let badGoal = try replay("a,1\n", "--goal", "money")
        #expect(!badGoal.succeeded && badGoal.error.contains("bad goal money"), "\(badGoal)")
        let empty = try replay("key,size\n")
        #expect(!empty.succeeded && empty.error.contains("no requests to replay"), "\(empty)")
    }

    @Test func theTablePrintsEveryPolicyAutoAndBeladyPerSize() throws {
        var lines = ""
        for round in 0..<50 { for key in 0..<10 { lines += "k\((key * 7 + round) % 12),100\n" } }
        let result = try replay(lines, "--size", "50%", "--size", "1K")
        #expect(result.succeeded, "\(result.error)")
        for policy in ["lru", "s3fifo", "sieve", "tinylfu", "gdsf", "auto", "belady"] {
            #expect(result.output.components(separatedBy: "  \(policy) ").count - 1 == 2, "\(policy): \(result.output)")
        }
        #expect(result.output.contains("600 B") && result.output.contains("1.0 KiB"), "\(result.output)")
    }

    /// Room for two files; reads a b c a b a, a costing 100 ms, b and c 1 ms (303 in all).
    /// LRU: c evicts a, a evicts b, b evicts c; the last a hits: 100 saved. GDSF by cost: a
    /// enters at 100, b at 1; c (1) evicts b, the clock rises to 1; a's hit sets it to
    /// 1 + 2 × 100; b (2) evicts c; a hits again: 200 saved. Costs differ, so Belady is a
    /// heuristic (it keeps a and b: 201) and the reference is the upper bound: intervals a
    /// 0-3, b 1-4 and a 3-5 take 8 of the 2 × 6 budget, all of them: 201 of 303.
    @Test func theCostGoalPrintsTheCostSavedComputedByHand() throws {
        let result = try replay("key,size,op,cost\na,10,get,100\nb,10,get,1\nc,10,get,1\na,10,get,100\nb,10,get,1\na,10,get,100\n",
                                "--objects", "--size", "2", "--goal", "cost", "--json", "--no-auto",
                                "--policy", "lru", "--policy", "gdsf")
        #expect(result.succeeded, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(report["goal"] as? String == "cost" && report["reference"] as? String == "upper-bound")
        let rows = report["rows"] as? [[String: Any]] ?? []
        let saved = Dictionary(uniqueKeysWithValues: rows.map {
            ($0["policy"] as? String ?? "", $0["cost_saved_ms"] as? Double ?? -1)
        })
        #expect(saved.count == 4, "\(rows)")
        #expect(abs((saved["lru"] ?? 0) - 100) < 1e-9 && abs((saved["gdsf"] ?? 0) - 200) < 1e-9, "\(saved)")
        #expect(abs((saved["belady-heuristic"] ?? 0) - 201) < 1e-9 && abs((saved["upper-bound"] ?? 0) - 201) < 1e-9,
                "\(saved)")
        let gdsf = try #require(rows.first { $0["policy"] as? String == "gdsf" })
        #expect(abs((gdsf["cost_saved_ratio"] as? Double ?? 0) - 200.0 / 303) < 1e-9)
        #expect(abs((gdsf["of_reference"] as? Double ?? 0) - 200.0 / 201) < 1e-9)
        let table = try replay("a,10,get,100\nb,10,get,1\nc,10,get,1\na,10,get,100\nb,10,get,1\na,10,get,100\n",
                               "--objects", "--size", "2", "--goal", "cost", "--no-auto")
        #expect(table.output.contains("COST SAVED") && table.output.contains("upper-bound")
                && table.output.contains("no cache of this size beats it"), "\(table.output)")
    }

    /// A loop over 30 files through 20 rooms: S3-FIFO, where `auto` starts, hits 0.28 and
    /// W-TinyLFU keeps more of the loop. `auto` leaves S3-FIFO for a policy that its
    /// simulations scored higher by the goal's measure, and the replay says on what figures.
    @Test func autoSaysWhichGoalAndFiguresItSwitchedOn() throws {
        let trace = (0..<60).flatMap { _ in (0..<30).map { "k\($0),64" } }.joined(separator: "\n") + "\n"
        let result = try replay(trace, "--objects", "--size", "20", "--goal", "bytes", "--json",
                                "--policy", "s3fifo")
        #expect(result.succeeded, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        let auto = try #require((report["rows"] as? [[String: Any]])?.first { $0["policy"] as? String == "auto" })
        let figures = try #require(auto["switch_figures"] as? [[String: Any]])
        #expect(figures.count == (auto["switches"] as? [String])?.count && !figures.isEmpty, "\(auto)")
        let first = try #require(figures.first)
        #expect(first["goal"] as? String == "bytes" && first["from"] as? String == "s3fifo", "\(first)")
        let simulated = try #require(first["simulated"] as? [String: Double])
        let to = try #require(first["to"] as? String)
        #expect((simulated[to] ?? 0) >= (simulated["s3fifo"] ?? 1) + 0.005, "\(first)")
        let table = try replay(trace, "--objects", "--size", "20", "--goal", "bytes", "--policy", "s3fifo")
        #expect(table.output.contains("(bytes ") && table.output.contains("against s3fifo's "), "\(table.output)")
    }
}
