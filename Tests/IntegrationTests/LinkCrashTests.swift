import Foundation
import Glibc
import Testing

/// Issue 8: `kill -9` of the daemon during a burst of link, symlink and rename by several
/// processes. After the remount every file's st_nlink equals the names found for its inode,
/// every directory's is 2 + its subdirectories, the pool's usage and file count equal the
/// sizes and number of its distinct inodes, and `cachefs verify` finds the store clean.
@Suite struct LinkCrashTests {
    @Test func killDuringALinkBurstLeavesExactLinkCountsAndUsage() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("mkdir data/burst")
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let outputs = (1...3).map { _ in OutputFile() }
            defer { outputs.forEach { $0.remove() } }
            let bursts = try outputs.enumerated().map { seed, output in
                try ChildProcess(["python3", ScriptHelper.path("link_workload.py"), "burst", mount.path("data/burst"), "60", "\(seed + 1)"],
                                 stdin: quiet, stdout: output.fd, stderr: output.fd)
            }
            // Let the bursts build a tree of a few hundred names, then kill in the middle.
            #expect(try Shell.waitUntil(seconds: 20) {
                let count = try Int(mount.sh("find data/burst | wc -l").output.trimmingCharacters(in: .whitespacesAndNewlines))
                return (count ?? 0) > 300
            })
            try mount.crash()
            for burst in bursts { burst.wait() }
            for output in outputs {
                let summary = output.contents()
                #expect(summary.contains("\"unexpected\": {}"), "a burst met an errno no race explains: \(summary)")
            }

            try mount.mount()
            let checked = try Shell.run(["python3", ScriptHelper.path("link_workload.py"), "check", mount.path("data")])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(checked.output.utf8)) as? [String: Any],
                                      "check: \(checked.error)")
            #expect((report["wrong_file_links"] as? [Any])?.isEmpty == true, "st_nlink against names: \(report)")
            #expect((report["wrong_dir_links"] as? [Any])?.isEmpty == true, "directory st_nlink: \(report)")
            let bytes = try #require(report["bytes"] as? Int)
            #expect(try mount.xattr("data", "user.cache.usage") == "\(bytes)", "usage against distinct inodes: \(report)")
            // A pool counts an inode once, whatever its names (docs/ext4-compatibility.md, hard links).
            let files = try #require(report["files"] as? Int)
            #expect(try mount.xattr("data", "user.cache.files") == "\(files)", "files against distinct inodes: \(report)")
            #expect(try mount.xattr("data", "user.cache.pending_usage") == "0")
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.status == 0 && verify.output.contains("clean"), "verify: \(verify.output) \(verify.error)")
        }
    }
}
