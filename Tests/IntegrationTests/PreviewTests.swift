import Foundation
import Testing

/// `cachefs preview` and `user.cache.preview` on a real mount: what they list is what a pass
/// then evicts, and they change nothing.
@Suite struct PreviewTests {
    private struct Report: Decodable {
        struct Victim: Decodable {
            var path: String
            var size: Int64
        }
        var files: [Victim]
        var total_files: Int
        var total_bytes: Int64
    }

    private func evictedPaths(_ mount: MountedStore) throws -> [String] {
        let events = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
        return try events.split(separator: "\n").compactMap { line -> String? in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return object["event"] as? String == "evicted" ? object["path"] as? String : nil
        }
    }

    @Test(arguments: ["lru", "s3fifo"])
    func loweringTheSizeEvictsExactlyWhatThePreviewListed(policy: String) throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("setfattr -n user.cache.eviction -v \(policy) data")
            _ = try mount.mustSucceed("""
                for i in $(seq 1 60); do head -c $(( 1000 + (i * 733) % 9000 )) /dev/urandom > data/f$i; done
                cat data/f1 data/f7 data/f2 > /dev/null
                setfattr -n user.cache.pinned -v 1 data/f3
                """)
            let before = try mount.mustSucceed("ls data | sort")
            let usage = try #require(Int64(try mount.xattr("data", "user.cache.usage")))
            let size = usage / 3
            let shown = try Shell.run([MountedStore.executable, "preview", mount.path("data"), "--size", String(size), "--json"])
            try #require(shown.succeeded, "\(shown.error)")
            let report = try JSONDecoder().decode(Report.self, from: Data(shown.output.utf8))
            #expect(report.total_files == report.files.count && report.total_files > 0)
            #expect(report.total_bytes == report.files.reduce(0) { $0 + $1.size })
            #expect(!report.files.contains { $0.path == "data/f3" }, "a pinned file is no victim")
            #expect(try mount.mustSucceed("ls data | sort") == before, "the preview removed something")
            let table = try Shell.run([MountedStore.executable, "preview", mount.path("data"), "--size", String(size)])
            #expect(table.succeeded && table.output.contains("total: \(report.total_files) files"), "\(table.output)")
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v \(size) data && setfattr -n user.cache.purge -v 1 data")
            #expect(try evictedPaths(mount) == report.files.map(\.path))
        }
    }

    @Test func theAttributeAndBadInput() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("for i in $(seq 1 150); do echo $i > data/f$i; done")
            let lines = try mount.xattr("data", "user.cache.preview").split(separator: "\n")
            #expect(lines.count == 100)
            #expect(lines.first?.split(separator: "\t").first == "data/f1", "\(lines.prefix(2))")
            let bad = try mount.sh("getfattr -n 'user.cache.preview?size=banana' data")
            #expect(!bad.succeeded && bad.error.contains("Invalid argument"), "\(bad.error)")
            let both = try Shell.run([MountedStore.executable, "preview", mount.path("data"), "--size", "1M", "--free", "1M"])
            #expect(both.status != 0 && both.error.contains("not both"), "\(both.error)")
            let outside = try Shell.run([MountedStore.executable, "preview", "/tmp", "--free", "1M"])
            #expect(outside.status != 0 && outside.error.contains("not on a cachefs mount"), "\(outside.error)")
            // Everything, with --free larger than the pool: every file listed once.
            let all = try Shell.run([MountedStore.executable, "preview", mount.path("data"), "--free", "1G", "--json"])
            let report = try JSONDecoder().decode(Report.self, from: Data(all.output.utf8))
            #expect(Set(report.files.map(\.path)).count == 150)
        }
    }
}
