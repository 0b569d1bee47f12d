import Foundation
import Testing

/// With `kernel_hits=off`, a hit is an OPEN, the READs the page cache cannot serve, and a
/// RELEASE the kernel does not wait for: a close of a file opened only to read sends no FLUSH.
/// Counted by the daemon's own request metrics, written to its metrics file at unmount. (With
/// `kernel_hits`, the default, a hit sends no request: `KernelHitsTests`.)
@Suite struct HitRoundTripTests {
    @Test func aCloseOfAFileOpenedToReadSendsNoFlush() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-hit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/cachefs.prom"
        let reads = 20
        try withMountedStore(arguments: ["-o", "kernel_hits=off,metrics_file=\(file),metrics_interval=60"]) { mount in
            _ = try mount.mustSucceed("echo cached > data/hit")
            _ = try mount.mustSucceed("for i in $(seq \(reads)); do cat data/hit > /dev/null; done")
            // A writer's close still flushes: its write is finished there.
            _ = try mount.mustSucceed("echo more >> data/hit")
            #expect(try mount.unmount() == 0)
        }
        let samples = MetricsTests.parse(try String(contentsOfFile: file, encoding: .utf8))
        let opens = samples["cachefs_request_duration_seconds_count{op=\"open\"}"] ?? 0
        let flushes = samples["cachefs_request_duration_seconds_count{op=\"flush\"}"] ?? 0
        #expect(opens >= Double(reads + 1), "each cat and the append open the file: \(opens) opens")
        #expect(flushes >= 2, "the create's and the append's closes flush: \(flushes) flushes")
        #expect(flushes < Double(reads), "\(flushes) flushes for \(reads) reads: a reader's close flushed")
    }
}

/// Hits share a kept read-only descriptor of the file's bytes; none outlives its bytes.
@Suite struct KeptDescriptorMountTests {
    /// The daemon's descriptors of bytes no entry owns any more: removed from the disk, or
    /// moved to the spares (where a kept one would read the next file's bytes).
    private static func deletedDescriptors(of pid: Int32, in store: String) throws -> [String] {
        let folder = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: folder).compactMap { fd in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + fd)
            guard let target, target.hasPrefix(store),
                  target.hasSuffix("(deleted)") || target.contains("/spares/") else { return nil }
            return target
        }
    }

    @Test(arguments: [false, true])
    func aReadFileRemovedOrEvictedLeavesNoDescriptorAndItsSpareServesTheNextFile(encrypted: Bool) throws {
        let check = { (mount: MountedStore) throws in
            let pid = try #require(mount.daemon?.pid)
            for round in 0..<3 {
                _ = try mount.mustSucceed("echo first-\(round) > data/a && cat data/a data/a > /dev/null")
                _ = try mount.mustSucceed("rm data/a")
                // The removed bytes become the next file's (a spare) once the removal commits.
                _ = try mount.mustSucceed("sleep 0.3; echo second-\(round) > data/b")
                #expect(try mount.mustSucceed("cat data/b") == "second-\(round)")
                _ = try mount.mustSucceed("rm data/b")
            }
            _ = try mount.mustSucceed("head -c 200000 /dev/urandom > data/c && cat data/c > /dev/null")
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            var deleted: [String] = []
            let none = try Shell.waitUntil(seconds: 5) {
                deleted = try Self.deletedDescriptors(of: pid, in: mount.store)
                return try deleted.isEmpty && mount.objectFileCount() == 0
            }
            #expect(none, "descriptors of removed bytes: \(deleted)")
        }
        if encrypted {
            try withEncryptedMountedStore(arguments: ["--pool", "data=0"], check)
        } else {
            try withMountedStore(arguments: ["--pool", "data=0"], check)
        }
    }
}
