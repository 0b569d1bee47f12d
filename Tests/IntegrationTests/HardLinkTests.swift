import Foundation
import Testing

/// Issue 8, the pool rules of links and special files: hard links only within one pool
/// (EXDEV across), nothing but pools at the mount root, the bytes stay until the last name
/// and the last open handle are gone, and flags set through any name belong to the inode.
@Suite struct HardLinkTests {
    @Test func linksStayInsideOnePoolAndTheRootHoldsOnlyPools() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("echo x > data/a")
            let across = try mount.sh("ln data/a thumbnails/a")
            #expect(!across.succeeded && across.error.contains("Invalid cross-device link"), "\(across)")
            let within = try mount.sh("mkdir data/sub && ln data/a data/sub/b && stat -c %h data/a")
            #expect(within.succeeded && within.output == "2\n", "\(within)")
            for (what, command) in [("symlink", "ln -s data/a s"), ("fifo", "mkfifo p"), ("hard link", "ln data/a root-link")] {
                let refused = try mount.sh(command)
                #expect(!refused.succeeded && refused.error.contains("Operation not permitted"), "\(what) at the root: \(refused)")
            }
        }
    }

    @Test func bytesStayUntilTheLastNameAndTheLastHandleAreGone() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("head -c 100000 /dev/urandom > data/f && ln data/f data/g")
            let sum = try mount.mustSucceed("sha256sum < data/f")
            // One shell holds the file open on fd 3 while both names go, then reads through it.
            let script = """
                exec 3< data/g
                rm data/f
                stat -c %h data/g
                rm data/g
                getfattr --only-values -n user.cache.pending_usage data; echo
                sha256sum <&3
                exec 3<&-
                """
            let held = try mount.sh(script)
            #expect(held.succeeded, "\(held.error)")
            #expect(held.output == "1\n100000\n\(sum)\n", "link count after one rm, pending_usage, checksum: \(held.output)")
            #expect(try Shell.waitUntil(seconds: 10) { try mount.xattr("data", "user.cache.pending_usage") == "0" })
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            #expect(try mount.objectFilesLeft(waitingUpTo: 5) == 0, "bytes left in the store")
        }
    }

    @Test func flagsSetThroughAnyNameBelongToTheInode() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("echo x > data/f && mkdir data/d && ln data/f data/d/g")
            _ = try mount.mustSucceed("setfattr -n user.cache.persistent -v 1 data/d/g")
            #expect(try mount.xattr("data/f", "user.cache.state") == "persistent")
            #expect(try mount.xattr("data", "user.cache.persistent_usage") == "2")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            _ = try mount.mustSucceed("setfattr -n user.cache.persistent -v 0 data/f")
            #expect(try mount.xattr("data/d/g", "user.cache.state") == "cached")
            #expect(try mount.xattr("data", "user.cache.usage") == "2")
        }
    }

    /// docs/ext4-compatibility.md: a link made into a persistent directory does not change the flags of the file
    /// it links, while a file created there is persistent.
    @Test func aLinkIntoAPersistentDirectoryKeepsTheFilesFlags() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("mkdir data/keep && setfattr -n user.cache.persistent -v 1 data/keep")
            _ = try mount.mustSucceed("echo x > data/f && ln data/f data/keep/f && echo y > data/keep/new")
            #expect(try mount.xattr("data/keep/f", "user.cache.state") == "cached")
            #expect(try mount.xattr("data/keep/new", "user.cache.state") == "persistent")
            #expect(try mount.xattr("data", "user.cache.usage") == "2")
            // Three names, two inodes: files counts each inode once, persistent ones too.
            #expect(try mount.xattr("data", "user.cache.files") == "2")
        }
    }
}
