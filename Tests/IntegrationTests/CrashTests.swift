import Foundation
import Glibc
import Testing

@Suite struct CrashTests {
    /// Also with the kernel serving opens (`kernel_hits`), where the write is marked at its
    /// first WRITE and finished by the close event.
    @Test(arguments: [[], ["-o", "kernel_hits"]])
    func killDuringAWriteDropsThePartialFileAndKeepsClosedOnes(options: [String]) throws {
        try withMountedStore(arguments: ["--pool", "data=0"] + options) { mount in
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
            #expect(try Shell.waitUntil(seconds: 20) {
                try (Int(mount.sh("stat -c %s data/partial").output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 1 << 20
            })
            try mount.crash()
            writer.wait()
            try mount.mount()
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "closed1 closed2 closed3")
            #expect(try mount.mustSucceed("sha256sum data/closed* | sort") == sums)
            let sizes = try mount.mustSucceed("stat -c %s data/* | awk '{s+=$1} END {print s}'")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            // No bytes without an entry: one object file per file present.
            #expect(try mount.objectFileCount() == 3)
        }
    }

    /// The usage rows commit with the entries (see UsageTotals): killed in the middle of creates
    /// and unlinks, the next mount reads them and they equal the bytes present.
    @Test func killDuringCreatesAndUnlinksLeavesUsageEqualToTheBytesPresent() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let quiet = open("/dev/null", O_RDWR | O_CLOEXEC)
            defer { close(quiet) }
            // Creates files of growing sizes and unlinks every other one, until the daemon dies.
            let churn = try ChildProcess(
                ["bash", "-c", """
                    cd '\(mount.path("data"))' || exit 1
                    for i in $(seq 1 100000); do
                        head -c $((i % 5000 + 1)) /dev/zero > f$i || exit 0
                        if ((i % 2 == 0)); then rm -f f$((i - 1)) || exit 0; fi
                    done
                    """],
                stdin: quiet, stdout: quiet, stderr: quiet)
            // Killed once 300 files are present: the churn's speed varies with the machine's
            // load (fork and exec per file), so only a churn that stops growing fails here.
            var present = 0, lastGrowth = Date()
            while present <= 300 && Date().timeIntervalSince(lastGrowth) < 10 {
                let listed = Int(try mount.mustSucceed("ls data | wc -l")) ?? 0
                if listed > present { (present, lastGrowth) = (listed, Date()) }
                usleep(20_000)
            }
            #expect(present > 300, "the churn stopped growing at \(present) files")
            try mount.crash()
            churn.wait()
            try mount.mount()
            let sizes = try mount.mustSucceed("find data -type f -printf '%s\\n' | awk '{s+=$1} END {print s+0}'")
            let files = try mount.mustSucceed("find data -type f | wc -l")
            #expect(try mount.xattr("data", "user.cache.usage") == sizes)
            #expect(try mount.xattr("data", "user.cache.files") == files)
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.status == 0, "\(verify.output) \(verify.error)")
            try mount.mount()
        }
    }
}
