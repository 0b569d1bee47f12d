import Foundation
import Testing

/// Issue 8: eviction chooses inodes, not names. Evicting a hard-linked file removes every
/// name (also names the kernel has looked up), counts its bytes once, and leaves symlinks
/// to it dangling: open answers ENOENT, readlink still answers. Pinning through any name
/// pins the inode.
@Suite struct LinkEvictionTests {
    /// The victim has three names in three directories and two symlinks (relative and
    /// absolute); three newer files that were read take the 1 MiB pool over its limit.
    static func fillPastTheLimit(_ mount: MountedStore) throws {
        _ = try mount.mustSucceed("""
            set -e
            mkdir data/d1 data/d2
            head -c 400000 /dev/urandom > data/victim
            ln data/victim data/d1/second
            ln data/victim data/d2/third
            ln -s victim data/relative
            ln -s '\(mount.path("data/d1/second"))' data/d2/absolute
            stat data/victim data/d1/second data/d2/third > /dev/null
            """)
        for index in 1...3 {
            _ = try mount.mustSucceed("head -c 300000 /dev/urandom > data/f\(index) && cat data/f\(index) > /dev/null")
        }
    }

    @Test func evictingAHardLinkedFileRemovesEveryNameAndSymlinksDangle() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            try Self.fillPastTheLimit(mount)
            let names = ["data/victim", "data/d1/second", "data/d2/third"]
            let gone = try Shell.waitUntil(seconds: 5) {
                try names.allSatisfy { try !mount.sh("test -e \($0)").succeeded }
            }
            let left = try mount.sh("ls -l \(names.joined(separator: " ")) 2>&1").output
            #expect(gone, "names left: \(left)")
            let listing = try mount.mustSucceed("ls -R data")
            for name in ["victim", "second", "third"] {
                #expect(!listing.split(separator: "\n").contains(Substring(name)), "ls -R still shows \(name):\n\(listing)")
            }
            // The inode's bytes are counted once: usage is the three newer files.
            #expect(try mount.xattr("data", "user.cache.usage") == "900000")
            #expect(try mount.xattr("data", "user.cache.evicted_bytes") == "400000")
            for link in ["data/relative", "data/d2/absolute"] {
                let opened = try mount.sh("cat \(link)")
                #expect(!opened.succeeded && opened.error.contains("No such file or directory"), "cat \(link): \(opened)")
            }
            #expect(try mount.mustSucceed("readlink data/relative") == "victim")
            #expect(try mount.mustSucceed("readlink data/d2/absolute") == mount.path("data/d1/second"))
        }
    }

    @Test func pinningThroughOneNamePinsTheInodeForEveryName() throws {
        try withMountedStore(arguments: ["--pool", "data=1M"]) { mount in
            _ = try mount.mustSucceed("head -c 400000 /dev/urandom > data/kept && mkdir data/d && ln data/kept data/d/other")
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 1 data/d/other")
            #expect(try mount.xattr("data/kept", "user.cache.state") == "pinned")
            for index in 1...3 {
                _ = try mount.mustSucceed("head -c 300000 /dev/urandom > data/f\(index) && cat data/f\(index) > /dev/null")
            }
            // Over the limit: the evictor must take f1, never the pinned inode.
            #expect(try Shell.waitUntil(seconds: 5) { try !mount.sh("test -e data/f1").succeeded })
            #expect(try mount.mustSucceed("stat -c %h data/kept data/d/other | tr '\\n' ' '") == "2 2")
        }
    }
}
