import Foundation
import Testing

/// Encrypted stores on a shared tier (docs/shared-tier.md, "Encrypted stores"): machines given
/// the same key file read each other's files; the tier holds sealed keys and values only, which
/// another key cannot find and a changed, cut or moved value cannot pass.
@Suite(.serialized) struct SharedTierEncryptedTests {
    /// The issue's scan: a file with a distinctive name and content, written on A, read on B
    /// (same key file, its own store and data key) as a shared hit; no key and no value of the
    /// tier holds the name, the content, or the pool's name.
    @Test func twoStoresWithOneKeyShareCiphertextOnly() throws {
        let redis = try SharedTierRedis()
        try withEncryptedTierMounts(redis, bUsesTheSameKey: true) { a, b in
            let name = "tier-secret-name-4711.jpg", content = "TIER-SECRET-CONTENT-"
            _ = try a.mustSucceed("for i in $(seq 1000); do printf '\(content)'; done > ../photo && cp ../photo thumbnails/\(name)")
            _ = try a.mustSucceed("mkdir -p thumbnails/tier-secret-dir && printf 'deep \(content)' > thumbnails/tier-secret-dir/\(name)")
            try waitUntilSharedBytesWritten(a, bytes: 20000 + 5 + content.count)
            #expect(try b.mustSucceed("cmp thumbnails/\(name) '\(a.directory)/photo' && echo same") == "same")
            #expect(try b.mustSucceed("mkdir thumbnails/tier-secret-dir && cat thumbnails/tier-secret-dir/\(name)")
                    == "deep \(content)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "2")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_read") == String(20000 + 5 + content.count))
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(try b.xattr("thumbnails/\(name)", "user.cache.state") == "cached")

            let keys = try tierKeys(redis)
            #expect(keys.count == 2, "\(keys)")
            for key in keys {
                #expect(key.hasPrefix("cachefs:s1:"), "\(key)")
                for word in ["thumbnails", "tier-secret", "4711", ".jpg"] {
                    #expect(!key.contains(word), "the key \(key) shows \(word)")
                }
            }
            let values = try dumpValues(redis, keys)
            let sizeShown = try Shell.bash("stat -c %s '\(values)'").output.trimmingCharacters(in: .whitespacesAndNewlines)
            let size = try #require(Int(sizeShown), "stat printed \(sizeShown)")
            #expect(size > 20000, "the values dumped are \(size) bytes")
            for marker in [content, "tier-secret", "4711", "thumbnails"] {
                let found = try Shell.bash("grep -caF '\(marker)' '\(values)'")
                #expect(found.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                        "the tier's values hold \(marker): \(found)")
            }
        }
    }

    /// A passphrase (a key file that is not 32 bytes) is stretched with each store's own salt
    /// for the store, and with the tier's fixed salt for the tier: two stores given the same
    /// passphrase share files.
    @Test func twoStoresWithOnePassphraseShareTheTier() throws {
        let redis = try SharedTierRedis()
        try withEncryptedTierMounts(redis, bUsesTheSameKey: true, passphrase: "correct horse battery staple") { a, b in
            _ = try a.mustSucceed("head -c 3000 /dev/urandom > ../photo && cp ../photo thumbnails/photo.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 3000)
            #expect(try b.mustSucceed("cmp thumbnails/photo.jpg '\(a.directory)/photo' && echo same") == "same")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            let keys = try tierKeys(redis)
            #expect(keys.count == 1 && keys.allSatisfy { $0.hasPrefix("cachefs:s1:") }, "\(keys)")
        }
    }

    /// A pool with an HTTP origin: B reads the version A fetched from the tier (no GET of its
    /// own), and the key seals the version's suffix too: neither the name, the origin nor the
    /// ETag shows in the tier's keys, nor the content in its values.
    @Test func anOriginPoolsFileIsSharedSealedWithItsVersion() throws {
        let redis = try SharedTierRedis()
        try withEncryptedTierMounts(redis, bUsesTheSameKey: true) { a, b in
            let nginx = try NginxOrigin(in: a.directory)
            defer { nginx.stop() }
            let content = "ORIGIN-SECRET-CONTENT-"
            // Larger than what comes with the lookup (128 KiB): fetched by a GET of its own.
            try String(repeating: content, count: 15_000).write(toFile: nginx.files + "/origin-secret-name.bin",
                                                               atomically: true, encoding: .utf8)
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.origin -v '\(nginx.url)' thumbnails")
            }
            let size = 15_000 * content.count
            #expect(try a.mustSucceed("cmp thumbnails/origin-secret-name.bin '\(nginx.files)/origin-secret-name.bin' && echo same")
                    == "same")
            try waitUntilSharedBytesWritten(a, bytes: size)
            #expect(try b.mustSucceed("cmp thumbnails/origin-secret-name.bin '\(nginx.files)/origin-secret-name.bin' && echo same")
                    == "same")
            #expect(nginx.count("GET /origin-secret-name.bin 200") == 1, "B fetched what the tier had: \(nginx.requests)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")

            let keys = try tierKeys(redis)
            #expect(keys.count == 1 && keys.allSatisfy { $0.hasPrefix("cachefs:s1:") }, "\(keys)")
            for key in keys {
                for word in ["origin", "secret", "etag", "thumbnails", "127.0.0.1"] {
                    #expect(!key.contains(word), "the key \(key) shows \(word)")
                }
            }
            let values = try dumpValues(redis, keys)
            for marker in [content, "origin-secret", "etag"] {
                let found = try Shell.bash("grep -caF '\(marker)' '\(values)'")
                #expect(found.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0",
                        "the tier's values hold \(marker): \(found)")
            }
        }
    }

    /// A store with another key finds nothing of A's: its keys are other keys, so each read is
    /// a miss (ENOENT), not an error, and nothing is stored. A plaintext store on the same tier
    /// likewise.
    @Test func anotherKeyOrAPlaintextStoreFindsNothing() throws {
        let redis = try SharedTierRedis()
        try withEncryptedTierMounts(redis, bUsesTheSameKey: false) { a, b in
            _ = try a.mustSucceed("printf 'made on A' > thumbnails/a.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 9)
            let read = try b.sh("cat thumbnails/a.jpg")
            #expect(!read.succeeded && read.error.contains("No such file"), "\(read)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(try b.objectFileCount() == 0)

            let plain = try MountedStore(mountName: "mnt-plain")
            _ = try plain.mustSucceed("setfattr -n user.cache.shared -v '\(redis.url)' thumbnails")
            let plainRead = try plain.sh("cat thumbnails/a.jpg")
            #expect(!plainRead.succeeded && plainRead.error.contains("No such file"), "\(plainRead)")
            #expect(try plain.xattr("thumbnails", "user.cache.shared_misses") == "1")
            #expect(try plain.xattr("thumbnails", "user.cache.shared_errors") == "0")
        }
    }

    /// A sealed value changed in Redis (one byte, SETRANGE), cut short, or copied under
    /// another file's key: never served; each an error counted and logged, and a miss.
    @Test func aChangedCutOrMovedValueIsNotServed() throws {
        let redis = try SharedTierRedis()
        try withEncryptedTierMounts(redis, bUsesTheSameKey: true) { a, b in
            var keyOf: [String: String] = [:]
            var written = 0
            for name in ["flipped", "cut", "moved", "source"] {
                let before = Set(try tierKeys(redis))
                _ = try a.mustSucceed("head -c 5000 /dev/urandom > thumbnails/\(name).jpg")
                written += 5000
                try waitUntilSharedBytesWritten(a, bytes: written)
                let added = Set(try tierKeys(redis)).subtracting(before)
                try #require(added.count == 1, "\(name): new keys \(added)")
                keyOf[name] = added.first
            }
            let flipped = try #require(keyOf["flipped"]), cut = try #require(keyOf["cut"])
            let moved = try #require(keyOf["moved"]), source = try #require(keyOf["source"])

            // One byte of the ciphertext, made different from what it is.
            let offset = 2000
            let byte = try redis.cli(["--raw", "GETRANGE", flipped, String(offset), String(offset)]).output
            #expect(try redis.cli(["SETRANGE", flipped, String(offset), byte.hasPrefix("x") ? "y" : "x"]).succeeded)
            let saved = redis.directory + "/value"
            _ = try Shell.bash("redis-cli -p \(redis.port) --raw GET '\(cut)' | head -c 3000 > '\(saved)'")
            #expect(try redis.cli(["SET", cut], stdinFile: saved).succeeded)
            #expect(try redis.cli(["COPY", source, moved, "REPLACE"]).output.contains("1"))

            for name in ["flipped", "cut", "moved"] {
                let read = try b.sh("cat thumbnails/\(name).jpg")
                #expect(!read.succeeded && read.error.contains("No such file"), "\(name): \(read)")
            }
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "3")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
            #expect(try b.objectFileCount() == 0)
            #expect(b.daemonLog.contains("a corrupt value in redis://127.0.0.1:\(redis.port)/0 was not served"),
                    "\(b.daemonLog)")
            // The value left whole is served.
            #expect(try b.mustSucceed("cmp thumbnails/source.jpg '\(a.mountpoint)/thumbnails/source.jpg' && echo same")
                    == "same")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
        }
    }
}

/// Mount A, an encrypted store with a new key (or, with `passphrase`, a key file holding that
/// passphrase), and mount B, an encrypted store of its own with A's key file
/// (`bUsesTheSameKey`) or a new key; both `thumbnails` pools share `redis`.
private func withEncryptedTierMounts(_ redis: SharedTierRedis, bUsesTheSameKey: Bool, passphrase: String? = nil,
                                     _ body: (MountedStore, MountedStore) throws -> Void) throws {
    let a = try MountedStore { store in
        guard let passphrase else { return try store.useNewKey() }
        try (passphrase + "\n").write(toFile: store.keyFile, atomically: true, encoding: .utf8)
        store.extraArguments += ["--encrypt", "--key-file", store.keyFile]
    }
    do {
        let b = try MountedStore(mountName: "mnt-b") { store in
            if bUsesTheSameKey {
                store.extraArguments += ["--encrypt", "--key-file", a.keyFile]
            } else {
                try store.useNewKey()
            }
        }
        do {
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.shared -v '\(redis.url)' thumbnails")
            }
            try body(a, b)
        } catch {
            Issue.record("log of mount B:\n\(b.daemonLog)")
            throw error
        }
    } catch {
        Issue.record("log of mount A:\n\(a.daemonLog)")
        throw error
    }
}

/// The tier's keys (`redis-cli --scan`); sealed keys are printable text without spaces.
private func tierKeys(_ redis: SharedTierRedis) throws -> [String] {
    let listed = try redis.cli(["--scan"])
    try #require(listed.succeeded, "\(listed.error)")
    return listed.output.split(separator: "\n").map(String.init)
}

/// A file holding the values of `keys`, one after the other, as `GET` returns them.
private func dumpValues(_ redis: SharedTierRedis, _ keys: [String]) throws -> String {
    let path = redis.directory + "/values"
    for key in keys {
        let got = try Shell.bash("redis-cli -p \(redis.port) --raw GET '\(key)' >> '\(path)'")
        try #require(got.succeeded, "GET \(key): \(got.error)")
    }
    return path
}
