import Foundation
import Glibc
import Testing

/// Pools sharing a tier in an S3 bucket (docs/shared-tier.md), served by moto on loopback with
/// its signature checks on: two mounts of two stores stand for two machines, their
/// `thumbnails` pools (no origin) both set to `s3://tier-bucket/fleet/`. Serialized: each test
/// starts its own server and mounts.
@Suite(.serialized) struct SharedTierS3Tests {
    static let tier = "s3://tier-bucket/fleet/"
    /// The object key of `thumbnails/NAME` as the request log shows it (percent-encoded).
    static func logged(_ name: String) -> String { "/tier-bucket/fleet/cachefs%3A1%3Athumbnails/" + name }

    /// A file copied in on A is PUT behind A's back; B's miss GETs it, stores it and reads it
    /// locally from then on. A name that is not UTF-8 and holds a `%` travels the same way.
    @Test func aFileWrittenOnOneMountIsReadOnTheOther() throws {
        try withS3SharedMounts { a, b, server in
            _ = try a.mustSucceed("head -c 20000 /dev/urandom > ../photo.jpg && cp ../photo.jpg thumbnails/")
            _ = try a.mustSucceed("printf odd > thumbnails/$'\\xff'100%.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 20003)
            let requests = server.requests()
            #expect(requests.contains("PUT " + Self.logged("photo.jpg")), "\(requests)")
            // The byte 0xFF is the key's `%FF`, the name's `%` its `%25` (each sent as `%25…`).
            #expect(requests.contains("PUT " + Self.logged("%25FF100%2525.jpg")), "\(requests)")
            // In the bucket: the CFST1 header, then the file.
            let saved = a.directory + "/object"
            try server.download(key: "fleet/cachefs:1:thumbnails/photo.jpg", to: saved)
            let object = try #require(FileManager.default.contents(atPath: saved))
            #expect(object.count == 46 + 20000 && object.prefix(5) == Data("CFST1".utf8))
            #expect(object.suffix(20000) == FileManager.default.contents(atPath: a.directory + "/photo.jpg"))

            #expect(try b.mustSucceed("cmp thumbnails/photo.jpg '\(a.directory)/photo.jpg' && echo same") == "same")
            #expect(server.requests().contains("GET " + Self.logged("photo.jpg")), "\(server.requests())")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_read") == "20000")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(try b.xattr("thumbnails/photo.jpg", "user.cache.state") == "cached")
            // Stored on B: read again without the tier.
            let gets = server.requests().filter { $0.hasPrefix("GET ") }.count
            _ = try b.mustSucceed("cat thumbnails/photo.jpg > /dev/null")
            #expect(server.requests().filter { $0.hasPrefix("GET ") }.count == gets)
            #expect(try b.mustSucceed("cat thumbnails/$'\\xff'100%.jpg") == "odd")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "2")
            // A name nobody wrote: 404 NoSuchKey, a miss of the tier, ENOENT.
            #expect(try b.sh("cat thumbnails/nobody.jpg").error.contains("No such file"))
            #expect(server.requests().contains("GET " + Self.logged("nobody.jpg")), "\(server.requests())")
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(try b.xattr("thumbnails", "user.cache.shared") == Self.tier)
        }
    }

    /// moto stopped: B's miss is ENOENT at once, counted and logged; A's write stays local
    /// and whole.
    @Test func aTierDownIsAMissAndAWriteStaysLocal() throws {
        try withS3SharedMounts { a, b, server in
            server.stop()
            let timed = try b.timedMiss("thumbnails/absent.jpg")
            #expect(timed.missed, "\(timed)")
            #expect(timed.milliseconds < 1000, "the miss took \(timed.milliseconds) ms")
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "0")
            #expect(b.daemonLog.contains("shared tier: reading from \(Self.tier) failed"), "\(b.daemonLog)")

            // Queued by the close's FLUSH; tried once the queue is empty again.
            _ = try a.mustSucceed("head -c 30000 /dev/urandom > ../local.jpg && cat ../local.jpg > thumbnails/local.jpg")
            try waitUntilTried(a)
            #expect(try a.mustSucceed("cmp thumbnails/local.jpg ../local.jpg && echo same") == "same")
            #expect(try a.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")
            // The lookup of the new name failed too: at least that and the write.
            #expect(try Int(a.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 >= 2)
        }
    }

    /// moto stopped with SIGSTOP (its port and connections open, no answers): a miss waits for
    /// the lookup's deadline only; a write is not held up; once it answers again, writes arrive.
    @Test func aStalledTierCostsALookupItsDeadlineOnly() throws {
        try withS3SharedMounts(lookupMilliseconds: nil) { a, b, server in
            // Connected first, so the stall meets an open connection, not a new one.
            #expect(try b.sh("cat thumbnails/first.jpg").error.contains("No such file"))
            server.suspend()
            let timed = try b.timedMiss("thumbnails/stalled.jpg")
            #expect(timed.missed, "\(timed)")
            #expect(timed.milliseconds < 1000, "the stalled miss took \(timed.milliseconds) ms")
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            #expect(b.daemonLog.contains("deadline (timeout)"), "\(b.daemonLog)")
            // A write on A returns while the tier stalls; its write-behind fails by its deadline.
            _ = try a.mustSucceed("timeout 5 sh -c 'printf stalled > thumbnails/written-while-stalled.jpg'")
            #expect(try a.mustSucceed("cat thumbnails/written-while-stalled.jpg") == "stalled")
            try waitUntilTried(a)
            #expect(try a.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")
            #expect(try Int(a.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 >= 2)
            server.resume()
            _ = try a.mustSucceed("printf again > thumbnails/after-the-stall.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 5)
            #expect(try b.mustSucceed("cat thumbnails/after-the-stall.jpg") == "again")
        }
    }

    /// B signs with a wrong secret: moto answers 403 SignatureDoesNotMatch; B's reads are
    /// misses and its writes stay local, each an error; the first one's line says what to check
    /// (the next ones within 10 s are counted, not logged).
    @Test func wrongCredentialsAreErrorsThatSayWhatToCheck() throws {
        try withS3SharedMounts(secretOfB: "not-the-secret") { a, b, server in
            _ = try a.mustSucceed("printf 'from a' > thumbnails/a.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 6)
            let read = try b.sh("cat thumbnails/a.jpg")
            #expect(!read.succeeded && read.error.contains("No such file"), "\(read)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
            #expect(b.daemonLog.contains("S3 denied GET s3://tier-bucket/fleet/cachefs:1:thumbnails/a.jpg (403 (SignatureDoesNotMatch: "),
                    "\(b.daemonLog)")
            #expect(b.daemonLog.contains("check credentials (access key \(server.accessKeyID), region \(server.region))"))
            #expect(!b.daemonLog.contains("not-the-secret"))

            // Two more errors: the create's LOOKUP of the new name asks the tier first (denied),
            // then the write-behind's PUT (denied). Waiting for "2" caught the moment between
            // them, when the poll was quick enough (a CI run's was not).
            _ = try b.mustSucceed("printf 'from b' > thumbnails/b.jpg")
            let bothDenied = try Shell.waitUntil(seconds: 10) {
                try b.xattr("thumbnails", "user.cache.shared_errors") == "3" && b.xattr("thumbnails", "user.cache.shared_queue") == "0"
            }
            let errors = try b.xattr("thumbnails", "user.cache.shared_errors")
            #expect(bothDenied, "shared_errors \(errors)")
            #expect(try b.mustSucceed("cat thumbnails/b.jpg") == "from b")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")
            #expect(try a.sh("cat thumbnails/b.jpg").error.contains("No such file"))
        }
    }

    /// Objects that are not a whole value of this format are never served: garbage put by
    /// someone else, a value cut short, a value with one byte changed.
    @Test func aCorruptTruncatedOrChangedObjectIsNotServed() throws {
        try withS3SharedMounts { a, b, server in
            try server.put(key: "fleet/cachefs:1:thumbnails/garbage.jpg",
                           contents: "not a cachefs value, though longer than its 46-byte header")
            _ = try a.mustSucceed("head -c 5000 /dev/urandom > thumbnails/whole.jpg && head -c 5000 /dev/urandom > thumbnails/changed.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 10000)
            let saved = a.directory + "/object"
            try server.download(key: "fleet/cachefs:1:thumbnails/whole.jpg", to: saved)
            let whole = try #require(FileManager.default.contents(atPath: saved))
            try whole.prefix(3000).write(to: URL(fileURLWithPath: saved))
            try server.put(key: "fleet/cachefs:1:thumbnails/cut.jpg", contentsOf: saved)
            try server.download(key: "fleet/cachefs:1:thumbnails/changed.jpg", to: saved)
            var changed = [UInt8](try #require(FileManager.default.contents(atPath: saved)))
            changed[changed.count - 1] ^= 0x01
            try Data(changed).write(to: URL(fileURLWithPath: saved))
            try server.put(key: "fleet/cachefs:1:thumbnails/changed.jpg", contentsOf: saved)

            for name in ["garbage.jpg", "cut.jpg", "changed.jpg"] {
                let read = try b.sh("cat thumbnails/\(name)")
                #expect(!read.succeeded && read.error.contains("No such file"), "\(name): \(read)")
            }
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "3")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
            // The first failure's line (the next ones within 10 s are counted, not logged).
            #expect(b.daemonLog.contains("a corrupt value in \(Self.tier) was not served (not a cachefs value (no CFST1 header))"),
                    "\(b.daemonLog)")
            #expect(try b.objectFileCount() == 0)
            // The whole one is served.
            #expect(try b.mustSucceed("cmp thumbnails/whole.jpg '\(a.mountpoint)/thumbnails/whole.jpg' && echo same") == "same")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
        }
    }

    /// A bucket that does not exist is a misconfigured tier, not a cold one: 404 NoSuchBucket
    /// is an error (a miss for the reader), where 404 NoSuchKey is a miss.
    @Test func aMissingBucketIsAnErrorNotAMiss() throws {
        try withS3SharedMounts { _, b, _ in
            _ = try b.mustSucceed("setfattr -n user.cache.shared -v s3://no-such-bucket/fleet/ thumbnails")
            #expect(try b.sh("cat thumbnails/x.jpg").error.contains("No such file"))
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "0")
            #expect(b.daemonLog.contains("GET s3://no-such-bucket/fleet/cachefs:1:thumbnails/x.jpg answered 404 (NoSuchBucket"),
                    "\(b.daemonLog)")
        }
    }

    /// A path whose object key would pass S3's 1,024 bytes stays local: its write is an error
    /// that says why, its lookup elsewhere a miss that asks S3 nothing.
    @Test func aKeyLongerThanS3AllowsIsNotShared() throws {
        try withS3SharedMounts { a, b, server in
            let deep = (1...4).map { String(repeating: Character(String($0)), count: 250) }.joined(separator: "/")
            for mount in [a, b] { _ = try mount.mustSucceed("mkdir -p thumbnails/\(deep)") }
            _ = try a.mustSucceed("printf deep > thumbnails/\(deep)/x.jpg")
            try waitUntilTried(a)
            #expect(try a.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")
            #expect(a.daemonLog.contains("would be longer than S3's 1024 bytes: not shared"), "\(a.daemonLog)")
            #expect(try a.mustSucceed("cat thumbnails/\(deep)/x.jpg") == "deep")
            // (Each directory `mkdir -p` looked up on B was a miss of the tier.)
            let misses = try Int(b.xattr("thumbnails", "user.cache.shared_misses")) ?? -1
            #expect(try b.sh("cat thumbnails/\(deep)/x.jpg").error.contains("No such file"))
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == String(misses + 1))
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            #expect(!server.requests().contains { $0.contains("x.jpg") }, "\(server.requests())")
        }
    }
}

/// Two mounts (two stores) whose `thumbnails` pools share `s3://tier-bucket/fleet/` on a fresh
/// moto, each with the server's endpoint and keys (B with `secretOfB` as its secret, if given),
/// as s3:// origins get them. The server stops and the mounts unmount also when `body` throws.
/// Their lookups wait `lookupMilliseconds` for the tier (`shared_lookup_ms`; nil keeps the
/// 200 ms default): moto, a Python server checking every
/// signature, can take longer than 200 ms to answer on a busy machine, and a test of what S3
/// answers must not turn into a test of how fast it answers.
private func withS3SharedMounts(secretOfB: String? = nil, lookupMilliseconds: Int? = 5_000,
                                _ body: (MountedStore, MountedStore, S3OriginServer) throws -> Void) throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-s3-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try withS3OriginServer(bucket: "tier-bucket", logIn: directory) { server in
        func reaching(_ server: S3OriginServer, secret: String?) -> (MountedStore) -> Void {
            { store in
                store.extraArguments += ["-o", "s3_endpoint=" + server.endpoint]
                if let lookupMilliseconds { store.extraArguments += ["-o", "shared_lookup_ms=\(lookupMilliseconds)"] }
                store.environment = ["AWS_ACCESS_KEY_ID": server.accessKeyID,
                                     "AWS_SECRET_ACCESS_KEY": secret ?? server.secretAccessKey,
                                     "AWS_SESSION_TOKEN": "", "AWS_REGION": server.region]
            }
        }
        let a = try MountedStore(prepare: reaching(server, secret: nil))
        let b = try MountedStore(mountName: "mnt-b", prepare: reaching(server, secret: secretOfB))
        do {
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.shared -v '\(SharedTierS3Tests.tier)' thumbnails")
            }
            try body(a, b, server)
        } catch {
            Issue.record("log of mount A:\n\(a.daemonLog)\nlog of mount B:\n\(b.daemonLog)\nS3 requests:\n\(server.requests())")
            throw error
        }
    }
}

/// Waits until `mount`'s thumbnails pool has nothing queued: each file queued has been tried.
private func waitUntilTried(_ mount: MountedStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let tried = try Shell.waitUntil(seconds: 10) { try mount.xattr("thumbnails", "user.cache.shared_queue") == "0" }
    try #require(tried, "the write-behind queue did not empty; log:\n\(mount.daemonLog)", sourceLocation: sourceLocation)
}
