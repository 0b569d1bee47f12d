import Foundation
import Glibc
import Testing

@Suite struct CrashTests {
    @Test func killDuringAWriteDropsThePartialFileAndKeepsClosedOnes() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            for index in 1...3 {
                _ = try mount.mustSucceed("head -c \(index * 300_000) /dev/urandom > data/closed\(index)")
            }
            let sums = try mount.mustSucceed("sha256sum data/closed* | sort")
            // A writer that keeps going until the daemon dies under it.
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            let writer = try ChildProcess(
                ["dd", "if=/dev/zero", "of=\(mount.path("data/partial"))", "bs=64k", "count=1000000"],
                stdin: quiet, stdout: quiet, stderr: quiet)
            #expect(Shell.waitUntil(seconds: 20) {
                (try? mount.sh("stat -c %s data/partial").output.trimmingCharacters(in: .whitespacesAndNewlines))
                    .flatMap { Int($0) }.map { $0 > 1 << 20 } ?? false
            })
            try mount.crash()
            writer.wait()
            try mount.mount()
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "closed1 closed2 closed3")
            #expect(try mount.mustSucceed("sha256sum data/closed* | sort") == sums)
            let sizes = try mount.mustSucceed("stat -c %s data/* | awk '{s+=$1} END {print s}'")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            // No bytes without an entry: one object file per file present.
            let objects = try Shell.bash("find '\(mount.store)/objects' -type f | wc -l").output
            #expect(objects.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        }
    }
}
