import Foundation
import Glibc
import Testing

/// However the daemon dies, no process waits for it: its connection guardian aborts the FUSE
/// connection when the daemon's main thread ends (docs/mounting.md#when-the-daemon-dies).
@Suite(.serialized) struct DaemonDeathTests {
    private static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    private static let driver = packageRoot + "/scripts/lib/torture_death.py"
    private static let cycles = 20

    /// The cycle's closing line: every cycle and the final mount, unmount and verify passed.
    private static var allPassed: String { "\n\(cycles + 1) passed, 0 failed" }

    @Test func aDaemonKilledDuringAnEvictionNeverBlocksItsClients() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-death-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try Shell.run(["python3", Self.driver, "--binary", MountedStore.executable, "--work", work,
                                    "--cycles", String(Self.cycles)])
        #expect(result.succeeded && result.output.contains(Self.allPassed), "\(result.output)\n\(result.error)")
    }

    @Test func aUsersDaemonKilledDuringAnEvictionNeverBlocksItsClients() throws {
        let sandbox = try UnprivilegedSandbox()
        for script in ["torture_death.py", "torture_support.py"] {
            let copied = try Shell.run(["cp", Self.packageRoot + "/scripts/lib/" + script, sandbox.directory])
            try #require(copied.succeeded, "\(copied.error)")
        }
        let result = try sandbox.run("""
            python3 '\(sandbox.directory)/torture_death.py' --binary '\(sandbox.binary)' --work "$PWD/work" \
              --cycles \(Self.cycles)
            """, node: .device(mode: "0666"), fusectl: .mounted)
        #expect(result.succeeded && result.output.contains(Self.allPassed), "\(result.output)\n\(result.error)")
    }

    /// A user cannot mount fusectl: the mount works, and says what is missing on the terminal
    /// of `cachefs mount` (the daemon's log moves to the store once the mount is ready).
    @Test func withoutTheControlFilesystemAUsersMountWorksAndSaysWhatIsMissing() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.makeStoreWithFile(fusectl: .unmounted)
        #expect(result.succeeded, "\(result.output)\n\(result.error)")
        #expect(result.error.contains("no connection guardian: the fusectl filesystem is not mounted at /sys/fs/fuse/connections"),
                "\(result.error)")
        #expect(try sandbox.mountAndReadBack().output == "kept\n")
    }

    /// A clean unmount ends the guardian too, without a word: it finds the connection gone.
    @Test func aCleanUnmountEndsTheGuardianQuietly() throws {
        try withMountedStore { mount in
            let daemon = try #require(mount.daemon)
            let guardians = "pgrep -f '^\(MountedStore.executable) connection-guardian --daemon \(daemon.pid) '"
            #expect(try Shell.bash(guardians).succeeded, "a mount has its guardian")
            #expect(try mount.unmount() == 0)
            #expect(try Shell.waitUntil(seconds: 10) { !(try Shell.bash(guardians).succeeded) }, "the guardian ended")
            #expect(!mount.daemonLog.contains("aborted FUSE connection"), "\(mount.daemonLog)")
            #expect(!mount.daemonLog.contains("no connection guardian"), "\(mount.daemonLog)")
        }
    }

    /// What the guardian's safety rests on: an `abort` file opened while a connection lived
    /// does nothing once that connection has ended, even when the next mount gets its number.
    @Test func anAbortFileOfAnEndedConnectionNeverReachesTheNextMount() throws {
        try withMountedStore { mount in
            let device = try mount.mustSucceed("mountpoint -d '\(mount.mountpoint)'")
            let parts = device.split(separator: ":").compactMap { UInt32($0) }
            try #require(parts.count == 2, "mountpoint -d printed \(device)")
            let abortPath = "/sys/fs/fuse/connections/\(parts[0] << 20 | parts[1])/abort"
            let stale = open(abortPath, O_WRONLY | O_CLOEXEC)
            try #require(stale >= 0, "\(abortPath): \(String(cString: strerror(errno)))")
            defer { close(stale) }
            // The kernel gives the lowest free number, which a mount of a test running beside
            // this one may take first: mount again until the number is the same.
            var sameNumber = false
            for _ in 0..<10 where !sameNumber {
                try mount.remount()
                sameNumber = try mount.mustSucceed("mountpoint -d '\(mount.mountpoint)'") == device
            }
            try #require(sameNumber, "no later mount got connection \(device) again, so this proves nothing")
            #expect("1".withCString { write(stale, $0, 1) } == 1)
            _ = try mount.mustSucceed("echo alive > data/f")
            #expect(try mount.mustSucceed("cat data/f") == "alive")
        }
    }
}
