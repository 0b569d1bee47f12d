import Foundation
import Glibc
import Testing

/// An encrypted store on a real mount: no byte of a file's contents reaches the disk in the
/// clear, and a changed stored block fails the reads that touch it, and only those.
@Suite struct EncryptedMountTests {
    private func withEncryptedMount(_ body: (MountedStore) throws -> Void) throws {
        let mounted = try MountedStore(arguments: ["--pool", "data=0"]) { store in
            let key = store.directory + "/store.key"
            let made = try Shell.run([MountedStore.executable, "keygen", key])
            try #require(made.succeeded, "\(made.error)")
            store.extraArguments += ["--encrypt", "--key-file", key]
        }
        defer { mounted.forceStop() }
        try body(mounted)
    }

    /// The object file that holds a file's bytes (its inode number is its entry id).
    private func objectPath(_ mount: MountedStore, _ relative: String) throws -> String {
        let id = try mount.mustSucceed("stat -c %i \(relative)")
        let found = try Shell.bash("find '\(mount.store)/objects' -type f -name '\(id)'").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(!found.isEmpty, "no object file for entry \(id)")
        return found
    }

    @Test func contentsNeverReachTheDiskInTheClear() throws {
        try withEncryptedMount { mount in
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

    @Test func aChangedBlockFailsOnlyTheReadsThatTouchIt() throws {
        let blockSize = 16384    // a new store's block size (BlockLayout.defaultBlockSize)
        try withEncryptedMount { mount in
            _ = try mount.mustSucceed("head -c \(5 * blockSize) /dev/urandom > data/f")
            let sums = try (0..<5).map { block in
                try mount.mustSucceed("dd if=data/f bs=\(blockSize) skip=\(block) count=1 status=none | sha256sum")
            }
            let object = try objectPath(mount, "data/f")
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
