import Foundation
import Testing

/// A hit is an OPEN, the READs the page cache cannot serve, and a RELEASE the kernel does not
/// wait for: a close of a file opened only to read sends no FLUSH. Counted by the daemon's
/// own request metrics, written to its metrics file at unmount.
@Suite struct HitRoundTripTests {
    @Test func aCloseOfAFileOpenedToReadSendsNoFlush() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-hit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/cachefs.prom"
        let reads = 20
        try withMountedStore(arguments: ["-o", "metrics_file=\(file),metrics_interval=60"]) { mount in
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
