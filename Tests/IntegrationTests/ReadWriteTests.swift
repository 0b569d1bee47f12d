import Foundation
import Testing

@Suite(.serialized) struct ReadWriteTests {
    @Test func copyInAndCatOutTenMiBAlsoAfterRemount() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let source = mount.directory + "/source.bin"
            try Shell.bash("head -c \(10 << 20) /dev/urandom > '\(source)'")
            let expected = try Shell.run(["sha256sum", source]).output.prefix(64)
            _ = try mount.mustSucceed("cp '\(source)' data/random.bin")
            #expect(try mount.mustSucceed("cat data/random.bin | sha256sum").prefix(64) == expected)
            #expect(try mount.mustSucceed("stat -c %s data/random.bin") == String(10 << 20))
            try mount.remount()
            #expect(try mount.mustSucceed("cat data/random.bin | sha256sum").prefix(64) == expected)
        }
    }

    @Test func directoriesRenamesAndRemovals() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("mkdir -p data/a/b/c && echo one > data/a/b/c/f && echo two > data/a/g")
            _ = try mount.mustSucceed("mv data/a/b/c/f data/a/moved")
            #expect(try mount.mustSucceed("cat data/a/moved") == "one")
            // Replacing an existing target, as rename(2) does.
            _ = try mount.mustSucceed("mv -f data/a/moved data/a/g")
            #expect(try mount.mustSucceed("cat data/a/g") == "one")
            #expect(try mount.mustSucceed("ls data/a | sort | tr '\\n' ' '") == "b g")
            let notEmpty = try mount.sh("rmdir data/a")
            #expect(!notEmpty.succeeded && notEmpty.error.contains("Directory not empty"))
            _ = try mount.mustSucceed("rm data/a/g && rmdir data/a/b/c data/a/b && rmdir data/a")
            #expect(try mount.mustSucceed("ls -A data") == "")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
        }
    }

    @Test func renameAcrossPoolsIsEXDEVAndMvStillWorks() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo hi > data/f")
            let direct = try mount.sh("python3 -c 'import os; os.rename(\"data/f\", \"avatars/f\")'")
            #expect(!direct.succeeded && direct.error.contains("[Errno 18]"))
            _ = try mount.mustSucceed("mv data/f avatars/f 2>/dev/null; test -f avatars/f && ! test -e data/f")
            #expect(try mount.mustSucceed("cat avatars/f") == "hi")
        }
    }

    @Test func aFileAtTheRootIsRefusedAndMkdirMakesAPersistentPool() throws {
        try withMountedStore { mount in
            let refused = try mount.sh("touch rootfile")
            #expect(!refused.succeeded && refused.error.contains("Operation not permitted"))
            _ = try mount.mustSucceed("mkdir music && echo la > music/song")
            try mount.remount()
            #expect(try mount.mustSucceed("ls | tr '\\n' ' '") == "avatars data music thumbnails")
            #expect(try mount.mustSucceed("cat music/song") == "la")
            #expect(try mount.xattr("music", "user.cache.max_size") == String(25 << 20))
        }
    }

    /// `ln`, `ln -s`, `mkfifo` and a socket work inside a pool, survive a remount, and keep
    /// the pool's rules: nothing but pools at the root, nothing linked across pools.
    @Test func hardLinksSymlinksAndSpecialFilesWorkInsideAPool() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("""
                mkdir data/sub && echo shared > data/f && ln data/f data/sub/g && ln -s ../f data/sub/s
                mkfifo data/fifo
                python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('data/sock')"
                """)
            let listing = "stat -c '%n %F %h %s' data/f data/sub/g data/sub/s data/fifo data/sock data/sub data"
            let expected = """
                data/f regular file 2 7
                data/sub/g regular file 2 7
                data/sub/s symbolic link 1 4
                data/fifo fifo 1 0
                data/sock socket 1 0
                data/sub directory 2 4096
                data directory 3 4096
                """
            #expect(try mount.mustSucceed(listing) == expected)
            #expect(try mount.mustSucceed("cat data/sub/s") == "shared")
            #expect(try mount.xattr("data", "user.cache.usage") == "7", "one inode, counted once")
            let crossPool = try mount.sh("ln data/f thumbnails/f")
            #expect(!crossPool.succeeded && crossPool.error.contains("Invalid cross-device link"), "\(crossPool.error)")
            let atRoot = try mount.sh("ln -s data root-link")
            #expect(!atRoot.succeeded && atRoot.error.contains("Operation not permitted"), "\(atRoot.error)")
            try mount.remount()
            #expect(try mount.mustSucceed(listing) == expected)
            #expect(try mount.mustSucceed("readlink data/sub/s; rm data/f; stat -c %h data/sub/g; cat data/sub/g") == "../f\n1\nshared")
            try mount.unmount()
            #expect(try Shell.run([MountedStore.executable, "verify", mount.store]).succeeded)
        }
    }

    @Test func ownershipModesAndTimesBehaveAsOnExt4() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f && chmod 640 data/f")
            #expect(try mount.mustSucceed("stat -c %a data/f") == "640")
            _ = try mount.mustSucceed("touch -d '2001-02-03 04:05:06.123456789' data/f")
            #expect(try mount.mustSucceed("stat -c %y data/f").hasPrefix("2001-02-03 04:05:06.123456789"))
            let before = try mount.mustSucceed("stat -c %Z data/f")
            _ = try mount.mustSucceed("sleep 1.1 && chmod 600 data/f")
            #expect(try mount.mustSucceed("stat -c %Z data/f") != before)
            _ = try mount.mustSucceed("truncate -s 5 data/f")
            #expect(try mount.mustSucceed("stat -c %s data/f") == "5")
        }
    }

    /// Found by scripts/torture: open(O_TRUNC) must empty the file (libfuse asks the kernel
    /// for atomic O_TRUNC, so the kernel sends no separate truncate).
    @Test func overwritingWithShorterContentTruncates() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("head -c 5000 /dev/zero > data/f && echo hi > data/f")
            #expect(try mount.mustSucceed("cat data/f") == "hi")
            #expect(try mount.mustSucceed("stat -c %s data/f") == "3")
            #expect(try mount.xattr("data", "user.cache.usage") == "3")
            try mount.remount()
            #expect(try mount.mustSucceed("stat -c %s data/f") == "3")
        }
    }

    @Test func dfReportsTheStoreFilesystem() throws {
        try withMountedStore { mount in
            let mounted = try mount.mustSucceed("df --output=size . | tail -1")
            let store = try Shell.run(["df", "--output=size", mount.store]).output
                .split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(mounted == store)
        }
    }
}
