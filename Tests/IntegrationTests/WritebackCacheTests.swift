import Foundation
import Glibc
import Testing

/// The kernel's writeback cache: write() returns once the bytes are in the page cache, and
/// every byte reaches the daemon before close() returns. Off unless `-o writeback_cache`.
@Suite struct WritebackCacheTests {
    /// `-o writeback_boost` finds its mount in mountinfo, where a space is `\040`, and lifts
    /// the kernel's per-mount ratio (root only, as these tests run).
    @Test func theBoostFindsAMountpointWithASpace() throws {
        let mount = try MountedStore(arguments: ["-o", "writeback_boost"], mountName: "mnt with space")
        let device = try mount.mustSucceed("mountpoint -d .")
        let ratio = try String(contentsOfFile: "/sys/class/bdi/\(device)/max_ratio", encoding: .utf8)
        #expect(ratio.trimmingCharacters(in: .whitespacesAndNewlines) == "100", "log: \(mount.daemonLog)")
        #expect(!mount.daemonLog.contains("writeback_boost:"), "\(mount.daemonLog)")
    }

    /// Usage while a 100-byte file is still open after its write(), then after close().
    static let usageWhileOpen = """
        python3 -c "
        import os
        fd = os.open('data/f', os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b'x' * 100)
        print(os.getxattr('data', 'user.cache.usage').decode(), end=' ')
        os.close(fd)
        print(os.getxattr('data', 'user.cache.usage').decode())"
        """

    static let writeback = ["--pool", "data=0", "-o", "writeback_cache"]

    @Test func writesWaitInTheKernelUntilCloseOnlyWithTheOption() throws {
        try withMountedStore(arguments: Self.writeback) { mount in
            let usage = try mount.mustSucceed(Self.usageWhileOpen)
            #expect(usage == "0 100", "the daemon saw the bytes before close()")
        }
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let usage = try mount.mustSucceed(Self.usageWhileOpen)
            #expect(usage == "100 100", "the daemon saw the bytes only at close()")
        }
    }

    /// The crash rule "a file is complete once close() returns" with the writeback cache: the
    /// kernel writes dirty pages back before each FLUSH, so a kill -9 just after close()
    /// (and the commit window) loses nothing.
    @Test func aFileIsCompleteOnceCloseReturnsAlsoAfterKill9() throws {
        try withMountedStore(arguments: Self.writeback) { mount in
            let source = mount.directory + "/source.bin"
            try Shell.bash("head -c \(8 << 20) /dev/urandom > '\(source)'")
            let expected = try Shell.run(["sha256sum", source]).output.prefix(64)
            _ = try mount.mustSucceed("cat '\(source)' > data/f && printf tail >> data/f")
            usleep(300_000)
            try mount.crash()
            try mount.mount()
            #expect(try mount.mustSucceed("stat -c %s data/f") == String((8 << 20) + 4))
            #expect(try mount.mustSucceed("head -c \(8 << 20) data/f | sha256sum").prefix(64) == expected)
            #expect(try mount.mustSucceed("tail -c 4 data/f") == "tail")
        }
    }

    /// With the writeback cache the kernel reads a page through a handle opened only to write
    /// (before a partial write) and handles O_APPEND itself: the bytes stay right, and such a
    /// read is not an access.
    @Test func writeOnlyAndAppendingOpensKeepBytesAndAreNoAccess() throws {
        try withMountedStore(arguments: Self.writeback) { mount in
            _ = try mount.mustSucceed("python3 -c \"open('data/f', 'w').write('hello\\n' * 1000)\"")
            try mount.remount()
            let accessed = try mount.xattr("data/f", "user.cache.last_access")
            sleep(2)
            _ = try mount.mustSucceed("""
                echo tail >> data/f
                python3 -c "
                import os
                fd = os.open('data/f', os.O_WRONLY)
                os.pwrite(fd, b'J', 0)
                os.close(fd)"
                """)
            let expected = "J" + String(repeating: "hello\n", count: 1000).dropFirst() + "tail"
            // Access times reach the inode within the access flush (2 s).
            sleep(3)
            #expect(try mount.xattr("data/f", "user.cache.last_access") == accessed)
            try mount.remount()
            #expect(try mount.mustSucceed("cat data/f") == expected)
            #expect(try mount.xattr("data", "user.cache.usage") == String(6005))
        }
    }

    /// A cached file past max_size: with the writeback cache the write() itself cannot fail,
    /// so close() reports EFBIG ("File too large"), not EIO; without it, the write() does.
    @Test(arguments: [true, false]) func aFileTooLargeIsEFBIGAtCloseOrAtTheWrite(writeback: Bool) throws {
        let options = writeback ? ["-o", "writeback_cache"] : []
        try withMountedStore(arguments: ["--pool", "data=1M"] + options) { mount in
            let script = """
                python3 -c "
                import os, errno
                fd = os.open('data/big', os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    for offset in range(0, 2000000, 65536): os.write(fd, bytes(65536))
                    print('written', end=' ')
                except OSError as error:
                    print('write', errno.errorcode[error.errno], end=' ')
                try:
                    os.close(fd); print('closed')
                except OSError as error:
                    print('close', errno.errorcode[error.errno])"
                """
            let outcome = try mount.mustSucceed(script)
            #expect(outcome == (writeback ? "written close EFBIG" : "write EFBIG closed"))
            #expect(try mount.mustSucceed("ls data") == "")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            #expect(try Shell.waitUntil(seconds: 3) { try mount.xattr("data", "user.cache.pending_usage") == "0" })
            // A new file of the same name is a new file.
            #expect(try mount.mustSucceed("echo ok > data/big && cat data/big") == "ok")
            #expect(try mount.mustSucceed("sync data/big && echo synced") == "synced")
        }
    }
}
