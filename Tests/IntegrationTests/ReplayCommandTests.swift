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
    /// 3 of 7. S3-FIFO and SIEVE: nothing is read again before it has to go, so like LRU.
    /// W-TinyLFU: at the second a, newcomer c ties b in frequency and a tie keeps main's b,
    /// so b's second read hits; later newcomers tie b again and go: 1 hit.
    @Test func aTinyTracePrintsTheHandCountedHitRatios() throws {
        let result = try replay("key,size\na,10\nb,10\nc,10\na,10\nb,10\nc,10\na,10\n",
                                "--objects", "--size", "2", "--json", "--no-auto")
        #expect(result.succeeded, "\(result.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(report["requests"] as? Int == 7 && report["distinct_keys"] as? Int == 3)
        let rows = report["rows"] as? [[String: Any]] ?? []
        let hits = Dictionary(uniqueKeysWithValues: rows.map { ($0["policy"] as? String ?? "", $0["hits"] as? Int ?? -1) })
        #expect(hits == ["lru": 0, "s3fifo": 0, "sieve": 0, "tinylfu": 1, "belady": 3], "\(rows)")
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
        let empty = try replay("key,size\n")
        #expect(!empty.succeeded && empty.error.contains("no requests to replay"), "\(empty)")
    }

    @Test func theTablePrintsEveryPolicyAutoAndBeladyPerSize() throws {
        var lines = ""
        for round in 0..<50 { for key in 0..<10 { lines += "k\((key * 7 + round) % 12),100\n" } }
        let result = try replay(lines, "--size", "50%", "--size", "1K")
        #expect(result.succeeded, "\(result.error)")
        for policy in ["lru", "s3fifo", "sieve", "tinylfu", "auto", "belady"] {
            #expect(result.output.components(separatedBy: "  \(policy) ").count - 1 == 2, "\(policy): \(result.output)")
        }
        #expect(result.output.contains("600 B") && result.output.contains("1.0 KiB"), "\(result.output)")
    }
}
