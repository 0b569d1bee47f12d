import Foundation
import Glibc
import Testing

/// An encrypted store on a real mount: no byte of a file's contents reaches the disk in the
/// clear, and a changed stored block fails the reads that touch it, and only those.
@Suite struct EncryptedMountTests {
    @Test func contentsNeverReachTheDiskInTheClear() throws {
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let marker = "MARKER-" + UUID().uuidString
            _ = try mount.mustSucceed("""
                for i in 1 2 3; do printf '%s\\n' \(marker) > data/plain$i; done
                head -c 100000 /dev/urandom > data/big && printf '%s' \(marker) >> data/big
                printf '%s' \(marker) | iconv -t UTF-16LE > data/wide
                dd if=data/big of=data/copy bs=4k status=none
                truncate -s 50000 data/copy && printf '%s' \(marker) | dd of=data/copy bs=1 seek=30000 conv=notrunc status=none
                """)
            #expect(try mount.mustSucceed("cat data/plain2") == marker)
            #expect(try mount.mustSucceed("tail -c \(marker.utf8.count) data/big") == marker)
            #expect(try mount.mustSucceed("stat -c %s data/big data/copy | tr '\\n' ' '") == "\(100_000 + marker.utf8.count) 50000")
            #expect(try mount.unmount() == 0)
            let base64 = Data(marker.utf8).base64EncodedString()
            for needle in [marker, base64] {
                let found = try Shell.run(["grep", "-rlaF", needle, mount.store])
                #expect(found.status == 1, "\(needle) found in \(found.output)")
            }
            let wide = try Shell.bash("printf '%s' \(marker) | iconv -t UTF-16LE | grep -rlaF -f - '\(mount.store)'")
            #expect(wide.status == 1, "UTF-16 form found in \(wide.output)")
            try mount.mount()
            #expect(try mount.mustSucceed("cat data/plain3") == marker)
            #expect(try mount.mustSucceed("dd if=data/copy bs=1 skip=30000 count=\(marker.utf8.count) status=none") == marker)
        }
    }

    /// The leak scan: a marker in a file's contents, names, a symlink's target, an
    /// xattr's name and value, a pool's origin, a refused setting and the events of a removal;
    /// then no form of it anywhere under the store (index pages, log, events included), while
    /// `cachefs events` still names the files through the daemon.
    @Test func aMarkerInEveryNameAndValueLeavesNoTraceInTheStore() throws {
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let marker = "MARKER" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
            let origin = mount.directory + "/origin-" + marker
            try FileManager.default.createDirectory(atPath: origin, withIntermediateDirectories: false)
            _ = try mount.mustSucceed("""
                mkdir data/dir-\(marker)
                printf '%s' \(marker) > data/dir-\(marker)/file-\(marker)
                ln data/dir-\(marker)/file-\(marker) data/dir-\(marker)/hard-\(marker)
                ln -s target-\(marker) data/link-\(marker)
                setfattr -n user.note-\(marker) -v value-\(marker) data/dir-\(marker)/file-\(marker)
                setfattr -n user.cache.origin -v 'file://\(origin)' thumbnails
                mv data/dir-\(marker)/file-\(marker) data/moved-\(marker)
                rm data/dir-\(marker)/hard-\(marker)
                printf '%s' \(marker) > data/gone-\(marker) && rm data/gone-\(marker)
                """)
            let refused = try mount.sh("setfattr -n user.cache.origin -v file:///nowhere-\(marker) avatars")
            #expect(!refused.succeeded, "an origin that is not a folder was taken")
            #expect(try mount.mustSucceed("readlink data/link-\(marker)") == "target-\(marker)")
            #expect(try mount.mustSucceed("getfattr --only-values -n user.note-\(marker) data/moved-\(marker)")
                    == "value-\(marker)")
            let badQuery = try mount.sh("getfattr -n 'user.cache.events?from=banana' .")
            #expect(!badQuery.succeeded && badQuery.error.contains("Invalid argument"), "\(badQuery.error)")
            let events = try Shell.run([MountedStore.executable, "events", mount.mountpoint])
            #expect(events.succeeded && events.output.contains("data/gone-\(marker)"), "\(events.output)\(events.error)")
            #expect(try mount.unmount() == 0)

            let forms = [marker, Data(marker.utf8).base64EncodedString()]
            for needle in forms {
                let found = try Shell.run(["grep", "-rlaF", needle, mount.store, mount.logPath])
                #expect(found.status == 1, "\(needle) found in \(found.output)")
            }
            let wide = try Shell.bash("printf '%s' \(marker) | iconv -t UTF-16LE | grep -rlaF -f - '\(mount.store)' '\(mount.logPath)'")
            #expect(wide.status == 1, "UTF-16 form found in \(wide.output)")
            let log = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
            #expect(log.contains("\"deleted\"") && log.contains("sealed:"), "\(log)")
            // The daemon runs in the foreground here: its log (STORE/daemon.log in the background) is this file.
            #expect(mount.daemonLog.contains("refused user.cache.origin=sealed:"), "\(mount.daemonLog)")

            try mount.mount()
            #expect(try mount.mustSucceed("cat data/moved-\(marker)") == marker)
            #expect(try mount.mustSucceed("getfattr --only-values -n user.cache.origin thumbnails") == "file://\(origin)")
            #expect(try mount.mustSucceed("ls data | sort | tr '\\n' ' '") == "dir-\(marker) link-\(marker) moved-\(marker)")
        }
    }

    /// What a plaintext store does, an encrypted one does too: a read-through origin (whose
    /// bytes are stored sealed), eviction within a limit with a pinned file kept, hard links and
    /// renames, and recovery after kill -9.
    @Test func originsEvictionPinsLinksAndRecoveryWork() throws {
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            let marker = "MARKER" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
            let origin = mount.directory + "/origin"
            try FileManager.default.createDirectory(atPath: origin, withIntermediateDirectories: false)
            try Data((marker + "\n").utf8).write(to: URL(fileURLWithPath: origin + "/fetched"))
            _ = try mount.mustSucceed("""
                setfattr -n user.cache.origin -v 'file://\(origin)' thumbnails
                setfattr -n user.cache.max_size -v 64K data
                head -c 16384 /dev/urandom > data/kept && setfattr -n user.cache.pinned -v 1 data/kept
                for i in 1 2 3 4 5 6 7 8; do head -c 16384 /dev/urandom > data/f$i; done
                mkdir data/dir && printf '%s' linked > data/dir/a && ln data/dir/a data/b && mv data/dir/a data/c
                """)
            #expect(try mount.mustSucceed("cat thumbnails/fetched") == marker)
            let sum = try mount.mustSucceed("sha256sum < data/kept")
            #expect(try Shell.waitUntil(seconds: 10) { Int(try mount.xattr("data", "user.cache.usage")) ?? .max <= 65536 })
            #expect(try mount.mustSucceed("cat data/b data/c") == "linkedlinked")
            try mount.crash()
            try mount.mount()
            #expect(try mount.mustSucceed("sha256sum < data/kept") == sum)
            #expect(try mount.xattr("data/kept", "user.cache.pinned") == "1")
            #expect(try mount.mustSucceed("cat thumbnails/fetched data/b") == marker + "\nlinked")
            #expect(try mount.mustSucceed("stat -c %h data/c") == "2")
            #expect(try mount.unmount() == 0)
            let found = try Shell.run(["grep", "-rlaF", marker, mount.store])
            #expect(found.status == 1, "the fetched file's bytes are stored in the clear: \(found.output)")
            let verify = try mount.verify(["--deep"])
            #expect(verify.succeeded && verify.output.contains("clean"), "\(verify.output)\(verify.error)")
        }
    }

    @Test func aChangedBlockFailsOnlyTheReadsThatTouchIt() throws {
        let blockSize = StoredLayout.plaintextBlock
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("head -c \(5 * blockSize) /dev/urandom > data/f")
            let sums = try (0..<5).map { block in
                try mount.mustSucceed("dd if=data/f bs=\(blockSize) skip=\(block) count=1 status=none | sha256sum")
            }
            let object = try mount.objectPath("data/f")
            #expect(try mount.unmount() == 0)
            // One byte in the middle of the second stored block (a 32-byte header, then blocks of
            // 12 + blockSize + 16 bytes).
            let offset = 32 + (12 + blockSize + 16) + 2000
            _ = try Shell.bash("""
                byte=$(dd if='\(object)' bs=1 skip=\(offset) count=1 status=none | od -An -tu1 | tr -d ' ')
                printf "$(printf '\\\\%03o' $(( (byte + 1) % 256 )))" | dd of='\(object)' bs=1 seek=\(offset) conv=notrunc status=none
                """)
            try mount.mount()
            for block in [0, 2, 3, 4] {
                #expect(try mount.mustSucceed("dd if=data/f bs=\(blockSize) skip=\(block) count=1 status=none | sha256sum")
                        == sums[block])
            }
            let damaged = try mount.sh("dd if=data/f bs=\(blockSize) skip=1 count=1 status=none of=/dev/null")
            #expect(!damaged.succeeded && damaged.error.contains("Input/output error"), "\(damaged.error)")
            let whole = try mount.sh("cat data/f > /dev/null")
            #expect(!whole.succeeded, "a read over the damaged block succeeded")
            #expect(try Shell.waitUntil(seconds: 5) {
                try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8).contains("\"tampered\"")
            })
        }
    }
}
