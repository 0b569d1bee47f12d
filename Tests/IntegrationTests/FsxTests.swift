import Foundation
import Testing

/// Issue 21: fsx passes on both kinds of store. Debian packages no fsx (neither xfstests'
/// nor LTP's), so `scripts/lib/fsx.py` stands in: seeded random writes, reads, mapped reads,
/// truncates, hole punches, zero ranges, allocations, copy_file_range and reopens of one
/// file, done alike on a file on the store's own disk (ext4, the oracle) and on one in a pool;
/// every answer, every size and, every few operations, the whole contents must agree.
/// `CACHEFS_FSX_SEED=N` repeats a failed run.
@Suite struct FsxTests {
    /// With and without the kernel's writeback cache, and with the kernel serving opens
    /// (`kernel_hits`): each changes which requests the daemon sees.
    static let mountOptions: [[String]] = [[], ["-o", "writeback_cache"], ["-o", "kernel_hits"]]

    @Test(arguments: StoreKind.allCases, mountOptions)
    func randomOperationsAnswerAsExt4Does(kind: StoreKind, options: [String]) throws {
        let seed = ProcessInfo.processInfo.environment["CACHEFS_FSX_SEED"].flatMap(Int.init) ?? Int.random(in: 0..<(1 << 31))
        try withMountedStore(arguments: ["--pool", "data=0"] + options, kind: kind) { mount in
            let ext4 = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4, withIntermediateDirectories: false)
            // A small file (many partial blocks and holes) and a larger one (many blocks per call).
            for (name, maxSize) in [("small", 256 * 1024), ("large", 4 * 1024 * 1024)] {
                let result = try Shell.run(["python3", ScriptHelper.path("fsx.py"), "--seed", "\(seed)", "--ops", "5000",
                                            "--max-size", "\(maxSize)", ext4 + "/" + name, mount.path("data/" + name)])
                #expect(result.succeeded, """
                    fsx on a \(kind) store \(options), \(name) file (CACHEFS_FSX_SEED=\(seed) repeats it):
                    \(result.output)\(result.error)
                    """)
            }
        }
    }
}
