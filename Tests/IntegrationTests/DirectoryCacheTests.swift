import Foundation
import Testing

/// Listings are kept in the kernel (`cache_readdir`, `keep_cache` on OPENDIR). The daemon's
/// own removals must still reach them: a name with a dentry through `notify_delete`, a name
/// the kernel only listed (no dentry) through the parent's cached pages being dropped.
@Suite struct DirectoryCacheTests {
    static let listing = "python3 -c \"import os, sys; print('\\n'.join(sorted(os.listdir(sys.argv[1]))))\""

    /// READDIR and READDIRPLUS requests in the daemon's libfuse trace (`-o debug`).
    static func directoryReads(in log: Substring) -> Int {
        log.split(separator: "\n").filter { $0.contains("opcode: READDIR") }.count
    }

    @Test func aWarmListingComesFromTheKernelAndTheDaemonsRemovalsStillReachIt() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            // 2,000 pinned files and, listed last, one that is not: only it goes at `clear`.
            _ = try mount.mustSucceed("""
                mkdir data/big data/small && setfattr -n user.cache.pinned -v 1 data/big
                python3 -c "
                for i in range(2000): open('data/big/f%04d' % i, 'w').write('x')
                open('data/big/zz-victim', 'w').write('v')"
                setfattr -n user.cache.pinned -v 0 data/big/zz-victim
                echo a > data/small/a && echo b > data/small/b
                """)
            // A fresh kernel cache with no dentries; libfuse traces every request.
            mount.extraArguments += ["-o", "debug"]
            try mount.remount()
            // The first page comes by READDIRPLUS (dentries), later pages by plain READDIR.
            let first = try mount.mustSucceed("\(Self.listing) data/big")
            #expect(first.split(separator: "\n").count == 2001)
            #expect(first.hasSuffix("zz-victim"))
            _ = try mount.mustSucceed("ls -l data/small")
            // The kernel may drop a cached listing it holds (on a loaded machine a listing of
            // data/big was seen, once in four full runs, to begin with a GETATTR of the
            // directory and read it all again; cause not found). So the check is that the
            // kernel serves a warm listing, one of three in a row, not that it always does:
            // with `cache_readdir` broken every one of them reaches the daemon.
            _ = try mount.mustSucceed("\(Self.listing) data/big; ls -l data/small")
            var warm: Substring = ""
            var servedByTheKernel = false
            for _ in 0..<3 where !servedByTheKernel {
                let before = mount.daemonLog.count
                let second = try mount.mustSucceed("\(Self.listing) data/big")
                #expect(second == first)
                _ = try mount.mustSucceed("ls -l data/small")
                warm = mount.daemonLog.dropFirst(before)
                servedByTheKernel = Self.directoryReads(in: warm) == 0
            }
            #expect(servedByTheKernel, "three warm listings in a row went to the daemon; the last:\n\(warm.suffix(2000))")
            #expect(Self.directoryReads(in: Substring(mount.daemonLog)) > 0, "the trace shows no READDIR at all")

            // Removals by the daemon: the victim (listed, no dentry) and data/small's files
            // (dentries from `ls -l`). The notification thread delivers them at once.
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            #expect(try Shell.waitUntil(seconds: 3) {
                try !mount.sh("\(Self.listing) data/big").output.contains("zz-victim")
            }, "the cached listing still shows a file the daemon removed")
            #expect(try mount.mustSucceed("\(Self.listing) data/big").split(separator: "\n").count == 2000)
            #expect(try Shell.waitUntil(seconds: 3) { try mount.sh("ls data/small").output == "" })

            // Changes through the mount: the kernel drops its own cached listing.
            _ = try mount.mustSucceed("\(Self.listing) data/big")
            _ = try mount.mustSucceed("touch data/big/new && rm data/big/f0001 && mv data/big/f0002 data/big/moved")
            let changed = try mount.mustSucceed("\(Self.listing) data/big").split(separator: "\n").map(String.init)
            #expect(changed.contains("new") && changed.contains("moved"))
            #expect(!changed.contains("f0001") && !changed.contains("f0002"))
            #expect(changed.count == 2000)
        }
    }
}
