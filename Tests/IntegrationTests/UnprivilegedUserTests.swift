import Foundation
import Glibc
import Testing

/// Users who are not root: a store of their own, and the one-line message of each way a
/// kernel mount can fail (it used to be a double free and a crash dump).
@Suite struct UnprivilegedUserTests {
    @Test func aUserWhoCanOpenDevFuseMountsWritesReadsPinsAndUnmounts() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.run("""
            set -e
            mkdir mnt
            '\(sandbox.binary)' mount store/of/mine mnt -o min_free=0
            echo hello > mnt/data/note
            cat mnt/data/note
            setfattr -n user.cache.pinned -v 1 mnt/data/note
            getfattr --only-values -n user.cache.state mnt/data/note; echo
            stat -c '%u' mnt/data/note
            fusermount3 -u mnt
            """, node: .device(mode: "0666"))
        #expect(result.succeeded, "\(result.error)")
        #expect(result.output.split(separator: "\n") == ["hello", "pinned", "\(UnprivilegedSandbox.uid)"], "\(result.output)")
        var info = stat()
        #expect(stat(sandbox.home + "/store/of/mine/index.sqlite", &info) == 0)
        #expect(info.st_uid == UInt32(UnprivilegedSandbox.uid))
    }

    @Test func aUserMountsAgainOverTheDeadMountOfTheirKilledDaemon() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.run("""
            set -e
            mkdir mnt
            '\(sandbox.binary)' mount store mnt -o min_free=0
            echo kept > mnt/data/f
            sleep 0.2
            pkill -KILL -f '^\(sandbox.binary) mount'
            for i in $(seq 50); do pgrep -f '^\(sandbox.binary) mount' >/dev/null || break; sleep 0.1; done
            ! stat -f mnt 2>/dev/null
            '\(sandbox.binary)' mount store mnt -o min_free=0
            cat mnt/data/f
            fusermount3 -u mnt
            """, node: .device(mode: "0666"))
        #expect(result.succeeded, "\(result.error)")
        #expect(result.output == "kept\n")
        #expect(result.error.contains("removed the dead mount on"), "\(result.error)")
    }

    @Test func aUserWhoCannotOpenDevFuseGetsOneLineAndExitOne() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.run("mkdir mnt && exec '\(sandbox.binary)' mount store mnt --foreground -o min_free=0",
                                     node: .device(mode: "0600"))
        try expectOneLineFailure(result, naming: "failed to open /dev/fuse: Permission denied",
                                 advising: "ask an administrator for read and write access")
        expectNoStore(sandbox.home + "/store")
    }

    @Test func allowOtherWithoutUserAllowOtherGetsOneLineAndExitOne() throws {
        let sandbox = try UnprivilegedSandbox()
        let result = try sandbox.run(
            "mkdir mnt && exec '\(sandbox.binary)' mount store mnt --foreground -o min_free=0,allow_other",
            node: .device(mode: "0666"), fuseConf: "# no user_allow_other\n")
        try expectOneLineFailure(result, naming: "user_allow_other",
                                 advising: "ask an administrator), or mount without allow_other")
        expectNoStore(sandbox.home + "/store")
    }

    @Test func aKernelMountThatFailsGetsOneLineAndLeavesTheStoreAsItWas() throws {
        let sandbox = try UnprivilegedSandbox()
        let store = sandbox.home + "/store"
        let mountpoint = sandbox.home + "/mnt"
        let first = try sandbox.makeStoreWithFile(asRoot: true)
        #expect(first.succeeded, "\(first.error)")
        let failed = try sandbox.run("exec '\(sandbox.binary)' mount store mnt --foreground -o min_free=0",
                                     node: .plainFile, asRoot: true)
        try expectOneLineFailure(failed, naming: "mount failed: Invalid argument", advising: "ls -l /dev/fuse")
        try expectStoreIntact(store)
        let again = try sandbox.mountAndReadBack(asRoot: true)
        #expect(again.succeeded, "\(again.error)")
        #expect(again.output == "kept\n")
        #expect(FileManager.default.fileExists(atPath: mountpoint))
    }

    private func expectOneLineFailure(_ result: CommandResult, naming cause: String, advising advice: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == 1, "status \(result.status): \(result.error)", sourceLocation: sourceLocation)
        let lines = result.error.split(separator: "\n")
        #expect(lines.count == 1, "\(result.error)", sourceLocation: sourceLocation)
        #expect(result.error.hasPrefix("cachefs: cannot mount on "), "\(result.error)", sourceLocation: sourceLocation)
        #expect(result.error.contains(cause), "\(result.error)", sourceLocation: sourceLocation)
        #expect(result.error.contains(advice), "\(result.error)", sourceLocation: sourceLocation)
    }

    /// The store this failed mount made is gone again.
    private func expectNoStore(_ store: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!FileManager.default.fileExists(atPath: store), "the failed mount left \(store)", sourceLocation: sourceLocation)
    }

    /// A failed mount hands the reserve back and lets go of the lock, as a clean unmount does.
    private func expectStoreIntact(_ store: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reserve = try FileManager.default.attributesOfItem(atPath: store + "/reserve")
        #expect((reserve[.size] as? NSNumber)?.intValue == 8 << 20, sourceLocation: sourceLocation)
        #expect(FileManager.default.fileExists(atPath: store + "/index.sqlite"), sourceLocation: sourceLocation)
        let lock = try Shell.run(["flock", "-n", store + "/lock", "true"])
        #expect(lock.succeeded, "the store's lock is still held", sourceLocation: sourceLocation)
    }
}
