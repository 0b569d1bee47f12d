import Foundation
import Testing

/// Issue 8: `open(2)` never answers ESTALE. A name replaced or removed while the kernel
/// still holds its old inode must open (old or new file) or answer ENOENT. Each loop is
/// 20,000 opens by two reader processes while a third replaces the name; the same loop
/// on ext4 is printed alongside as the reference.
@Suite struct EstaleTests {
    @Test func opensRacingOsReplaceNeverSeeEstaleOrEnoent() throws {
        let counts = try runLoop("replace")
        #expect(counts.mount["ESTALE", default: 0] == 0, "\(counts)")
        // ext4 gives 0 ENOENT: the name always exists, rename swaps it atomically.
        #expect(counts.mount["ENOENT", default: 0] == 0, "\(counts)")
        #expect(counts.mount["torn", default: 0] == 0, "\(counts)")
        #expect(counts.unexpected(in: counts.mount, allowing: []).isEmpty, "\(counts)")
    }

    @Test func opensRacingUnlinkAndCreateSeeTheFileOrEnoent() throws {
        let counts = try runLoop("recreate")
        #expect(counts.mount["ESTALE", default: 0] == 0, "\(counts)")
        #expect(counts.unexpected(in: counts.mount, allowing: ["ENOENT"]).isEmpty, "\(counts)")
    }

    struct LoopCounts: CustomStringConvertible {
        let ext4: [String: Int]
        let mount: [String: Int]

        /// Outcomes other than a successful open and the errnos allowed.
        func unexpected(in counts: [String: Int], allowing: Set<String>) -> [String: Int] {
            let known: Set<String> = ["ok", "opens", "torn", "writer_iterations", "milliseconds"]
            return counts.filter { !known.contains($0.key) && !allowing.contains($0.key) && $0.value != 0 }
        }

        var description: String { "cachefs: \(Self.line(mount)); ext4: \(Self.line(ext4))" }

        private static func line(_ counts: [String: Int]) -> String {
            counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
    }

    private func runLoop(_ mode: String) throws -> LoopCounts {
        var counts: LoopCounts?
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let ext4Directory = mount.directory + "/ext4"
            try FileManager.default.createDirectory(atPath: ext4Directory, withIntermediateDirectories: false)
            _ = try mount.mustSucceed("mkdir data/race")
            let measured = LoopCounts(ext4: try loop(mode, in: ext4Directory), mount: try loop(mode, in: mount.path("data/race")))
            print("ESTALE loop '\(mode)': \(measured)")
            counts = measured
        }
        return try #require(counts)
    }

    /// The helper's counts, with the writer's errors as "writer ERRNO" and the time as milliseconds.
    private func loop(_ mode: String, in directory: String) throws -> [String: Int] {
        let result = try Shell.run(["timeout", "120", "python3", ScriptHelper.path("estale_loop.py"), mode, directory, "20000", "2"])
        guard result.succeeded,
              let summary = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        else { throw MountError(message: "estale_loop.py \(mode) in \(directory): \(result.status) \(result.error)") }
        var counts: [String: Int] = [:]
        for (key, value) in summary {
            if key == "seconds", let seconds = value as? Double {
                counts["milliseconds"] = Int(seconds * 1000)
            } else if let number = value as? Int {
                counts[key] = number
            }
            for (name, count) in value as? [String: Int] ?? [:] { counts["writer " + name] = count }
        }
        return counts
    }
}
