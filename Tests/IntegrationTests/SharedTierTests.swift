import Foundation
import Glibc
import Testing

/// Pools sharing a tier on a real `redis-server` (docs/shared-tier.md): two mounts of two
/// stores stand for two machines. Serialized: each test starts its own server and mounts.
@Suite(.serialized) struct SharedTierTests {
    /// A file copied in on A reaches the tier behind A's back; B's miss reads it from there,
    /// stores it, and reads it locally from then on.
    @Test func aFileWrittenOnOneMountIsReadOnTheOther() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, b in
            _ = try a.mustSucceed("head -c 20000 /dev/urandom > ../photo.jpg && cp ../photo.jpg thumbnails/")
            try waitUntilSharedBytesWritten(a, bytes: 20000)
            #expect(try b.mustSucceed("cmp thumbnails/photo.jpg '\(a.directory)/photo.jpg' && echo same") == "same")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_read") == "20000")
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "0")
            // Stored on B: a local file from now on, read again without the tier.
            #expect(try b.xattr("thumbnails/photo.jpg", "user.cache.state") == "cached")
            #expect(try b.mustSucceed("stat -c %s thumbnails/photo.jpg") == "20000")
            _ = try b.mustSucceed("cat thumbnails/photo.jpg > /dev/null")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.objectFileCount() == 1)
            // A name nobody wrote: a miss of the tier, ENOENT.
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "0")
            #expect(try b.sh("cat thumbnails/nobody.jpg").error.contains("No such file"))
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "1")
            // A name in a directory: the key is the whole path (directories are made locally).
            _ = try a.mustSucceed("mkdir -p thumbnails/2026/11 && printf 'deep' > thumbnails/2026/11/x.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 20004)
            #expect(try b.mustSucceed("mkdir -p thumbnails/2026/11 && cat thumbnails/2026/11/x.jpg") == "deep")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "2")
        }
    }

    /// Redis killed: B's miss answers ENOENT at once and counts an error; A's write stays
    /// local. Redis back on its port: A's client connects again by itself.
    @Test func aTierDownIsAMissAndItsReturnIsNoticed() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, b in
            redis.kill()
            let timed = try b.timedMiss("thumbnails/absent.jpg")
            #expect(timed.missed, "\(timed)")
            #expect(timed.milliseconds < 1000, "the miss took \(timed.milliseconds) ms")
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            #expect(b.daemonLog.contains("shared tier: reading from redis://127.0.0.1:\(redis.port)/0 failed"))

            _ = try a.mustSucceed("printf 'still local' > thumbnails/local.jpg")
            #expect(try Shell.waitUntil(seconds: 10) { try Int(a.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0 })
            #expect(try a.mustSucceed("cat thumbnails/local.jpg") == "still local")
            #expect(try a.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")

            try redis.start()
            // The client backs off after failed connects (at most 5 s): a write meanwhile is
            // counted as failed and not retried, so new files are written until one arrives.
            var attempt = 0
            let reached = try Shell.waitUntil(seconds: 20) {
                attempt += 1
                _ = try a.mustSucceed("printf 'back %d' \(attempt) > thumbnails/back-\(attempt).jpg")
                return try Shell.waitUntil(seconds: 1) {
                    try Int(a.xattr("thumbnails", "user.cache.shared_bytes_written")) ?? 0 > 0
                }
            }
            #expect(reached, "no write reached the restarted tier; log:\n\(a.daemonLog)")
            #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/back-\(attempt).jpg"]).output.contains("1"))
        }
    }

    /// Each failure of the tier can be an event (`shared_tier_failed`, naming the pool and why),
    /// at most one per 10 s: a dead tier failing every lookup writes one, then the next one
    /// counts the failures left out in between.
    @Test func aTierFailureIsAnEventAtMostOnePerInterval() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { _, b in
            redis.kill()
            let started = Date()
            var failures = 0
            func failOnce() throws {
                failures += 1
                #expect(try b.sh("cat thumbnails/absent-\(failures).jpg").error.contains("No such file"))
            }
            for _ in 0..<5 { try failOnce() }
            let first = try b.events(waitingUpTo: 5) { $0.contains("shared_tier_failed") }
            let line = try #require(first.split(separator: "\n").first { $0.contains("\"shared_tier_failed\"") })
            #expect(line.contains("\"pool\":\"thumbnails\"") && line.contains("reading from redis://127.0.0.1:\(redis.port)/0 failed"),
                    "\(line)")
            // More failures until the next interval's event, which counts those left out.
            var events = ""
            let summarized = try Shell.waitUntil(seconds: 30) {
                try failOnce()
                events = try b.events(waitingUpTo: 0) { _ in true }
                return events.contains("more failures since the last event")
            }
            #expect(summarized, "\(events)")
            let recorded = events.split(separator: "\n").filter { $0.contains("\"shared_tier_failed\"") }.count
            let intervals = Int(Date().timeIntervalSince(started) / 10) + 1
            #expect(recorded >= 2 && recorded <= intervals && recorded < failures,
                    "\(recorded) events for \(failures) failures in \(intervals) intervals: \(events)")
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 >= failures)
        }
    }

    /// A tier that stalls (SIGSTOP: connections open, no answers): a miss waits for the
    /// lookup's deadline only, then ENOENT; a write is not held up; answers resume after.
    @Test func aStalledTierCostsALookupItsDeadlineOnly() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, b in
            // Connected first, so the stall meets an open connection, not a refused connect.
            #expect(try b.sh("cat thumbnails/first.jpg").error.contains("No such file"))
            redis.suspend()
            defer { redis.resume() }
            let timed = try b.timedMiss("thumbnails/stalled.jpg")
            #expect(timed.missed, "\(timed)")
            #expect(timed.milliseconds < 1000, "the stalled miss took \(timed.milliseconds) ms")
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            #expect(b.daemonLog.contains("timeout") || b.daemonLog.contains("deadline"), "\(b.daemonLog)")
            // A write on A is not held up by the stalled tier, and stays local.
            _ = try a.mustSucceed("timeout 5 sh -c 'printf stalled > thumbnails/written-while-stalled.jpg'")
            #expect(try a.mustSucceed("cat thumbnails/written-while-stalled.jpg") == "stalled")
        }
    }

    /// Killed (SIGKILL) while its write-behind waits on a stalled tier: the file is whole on
    /// the next mount, and the tier holds nothing another mount would serve torn (no key, or
    /// the whole file: a value is checked against its length and digest before it is served).
    @Test func aKillDuringAWriteBehindLeavesTheFileWholeAndTheTierUntorn() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, b in
            // Connected first, so the stall meets an open connection.
            _ = try a.mustSucceed("printf warm > thumbnails/warm.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 4)
            redis.suspend()
            _ = try a.mustSucceed("head -c 100000 /dev/urandom > thumbnails/killed.jpg")
            let sum = try a.mustSucceed("sha256sum < thumbnails/killed.jpg")
            // Killed once its write-behind waits on the tier (the figure read catches up on the
            // close, which ends the write and queues it) and its finish is in the index
            // (`sync`): a kill within the commit window of the close may drop the file, which
            // is docs/crash-safety.md's rule, not this test's subject.
            #expect(try Shell.waitUntil(seconds: 10) { try a.xattr("thumbnails", "user.cache.shared_queue") == "1" },
                    "the write-behind of killed.jpg was never queued")
            _ = try a.mustSucceed("sync thumbnails/killed.jpg")
            try a.crash()
            redis.resume()
            try a.mount()
            #expect(try a.mustSucceed("sha256sum < thumbnails/killed.jpg") == sum)
            let read = try b.sh("sha256sum < thumbnails/killed.jpg")
            #expect(read.succeeded ? read.output.trimmingCharacters(in: .whitespacesAndNewlines) == sum
                                   : read.error.contains("No such file"), "\(read)")
        }
    }

    /// Values that are not a whole file of this format (garbage someone SET, a value cut
    /// short) are never served: ENOENT, an error counted, a log line.
    @Test func aCorruptOrTruncatedValueIsNotServed() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, b in
            #expect(try redis.cli(["SET", "cachefs:1:thumbnails/garbage.jpg", "not a cachefs value"]).succeeded)
            _ = try a.mustSucceed("head -c 5000 /dev/urandom > thumbnails/whole.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 5000)
            let saved = redis.directory + "/value"
            _ = try Shell.bash("redis-cli -p \(redis.port) --raw GET cachefs:1:thumbnails/whole.jpg | head -c 3000 > '\(saved)'")
            #expect(try redis.cli(["SET", "cachefs:1:thumbnails/cut.jpg"], stdinFile: saved).succeeded)
            for name in ["garbage.jpg", "cut.jpg"] {
                let read = try b.sh("cat thumbnails/\(name)")
                #expect(!read.succeeded && read.error.contains("No such file"), "\(name): \(read)")
            }
            #expect(try b.xattr("thumbnails", "user.cache.shared_errors") == "2")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
            #expect(b.daemonLog.contains("a corrupt value in redis://127.0.0.1:\(redis.port)/0 was not served"))
            #expect(try b.objectFileCount() == 0)
        }
    }

    /// A server with a password: the mount's password file works, a wrong one is an error
    /// and a miss; a password in the setting itself is refused.
    @Test func aPasswordComesFromAFileNeverFromTheSetting() throws {
        let redis = try SharedTierRedis(password: "tier-s3cret")
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: files) }
        try "tier-s3cret\n".write(toFile: files + "/right", atomically: true, encoding: .utf8)
        try "wrong-one\n".write(toFile: files + "/wrong", atomically: true, encoding: .utf8)
        try withSharedMounts(redis, a: ["-o", "shared_password_file=\(files)/right"],
                             b: ["-o", "shared_password_file=\(files)/wrong"]) { a, b in
            _ = try a.mustSucceed("printf 'with a password' > thumbnails/p.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 15)
            #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/p.jpg"]).output.contains("1"))
            // Read through the tier with the password: a name A never had (the value moved to it).
            #expect(try redis.cli(["RENAME", "cachefs:1:thumbnails/p.jpg", "cachefs:1:thumbnails/q.jpg"]).succeeded)
            #expect(try a.mustSucceed("cat thumbnails/q.jpg") == "with a password")
            #expect(try a.xattr("thumbnails", "user.cache.shared_hits") == "1")
            // The wrong password: refused by Redis, a miss for the reader.
            #expect(try b.sh("cat thumbnails/q.jpg").error.contains("No such file"))
            #expect(try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 > 0)
            // A password in the URL is refused, and not written to the log.
            let refused = try a.sh("setfattr -n user.cache.shared -v 'redis://:hunter2word@127.0.0.1:\(redis.port)/0' thumbnails")
            #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(refused)")
            #expect(a.daemonLog.contains("shared_password_file"))
            #expect(!a.daemonLog.contains("hunter2word"))
            #expect(try a.xattr("thumbnails", "user.cache.shared") == redis.url)
        }
    }

    /// A password file that cannot be read stops the mount with one line that names it.
    /// Without `shared_password_file`, systemd's credential (`LoadCredential=` puts it in
    /// `$CREDENTIALS_DIRECTORY`) is the password: the write reaches a server that requires one.
    @Test func aPasswordComesFromSystemdsCredential() throws {
        let redis = try SharedTierRedis(password: "from-systemd")
        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-cred-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: credentials) }
        try "from-systemd\n".write(toFile: credentials + "/cachefs.shared-password", atomically: true, encoding: .utf8)
        let mount = try MountedStore(prepare: { $0.environment = ["CREDENTIALS_DIRECTORY": credentials] })
        _ = try mount.mustSucceed("setfattr -n user.cache.shared -v '\(redis.url)' thumbnails")
        _ = try mount.mustSucceed("printf 'credential' > thumbnails/c.jpg")
        try waitUntilSharedBytesWritten(mount, bytes: 10)
        #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/c.jpg"]).output.contains("1"))
        #expect(try mount.xattr("thumbnails", "user.cache.shared_errors") == "0")
    }

    /// `shared_lookup_ms` out of its range, or not a number: the mount fails with one line that
    /// says what it takes, and nothing is mounted.
    @Test(arguments: ["0", "60001", "soon", ""])
    func aBadLookupDeadlineFailsTheMount(value: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/mnt", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Shell.run(["timeout", "20", MountedStore.executable, "mount", directory + "/store",
                                    directory + "/mnt", "--foreground", "-o", "shared_lookup_ms=\(value)"])
        #expect(result.status != 0 && result.status != 124, "\(result)")
        #expect(result.error.contains("shared_lookup_ms needs milliseconds from 1 to 60000"), "\(result)")
        #expect(!(try String(contentsOfFile: "/proc/mounts", encoding: .utf8)).contains(directory + "/mnt"))
    }

    @Test func anUnreadablePasswordFileFailsTheMount() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/mnt", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Shell.run(["timeout", "20", MountedStore.executable, "mount", directory + "/store",
                                    directory + "/mnt", "--foreground", "-o", "shared_password_file=\(directory)/absent"])
        #expect(result.status != 0 && result.status != 124, "\(result)")
        #expect(result.error.contains("cannot read the shared tier's password file \(directory)/absent"), "\(result)")
    }

    /// The setting is persisted as the origin is: shown by getfattr, there after a remount.
    @Test func theSettingIsShownAndPersists() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, _ in
            #expect(try a.mustSucceed("getfattr -n user.cache.shared thumbnails").contains("user.cache.shared=\"\(redis.url)\""))
            _ = try a.mustSucceed("setfattr -n user.cache.shared_max_file_size -v 256K thumbnails")
            try a.remount()
            #expect(try a.xattr("thumbnails", "user.cache.shared") == redis.url)
            #expect(try a.xattr("thumbnails", "user.cache.shared_max_file_size") == "262144")
            #expect(try a.xattr("data", "user.cache.shared") == "")
            // Other schemes: refused with a reason.
            for url in ["http://127.0.0.1:\(redis.port)/", "memcached://127.0.0.1:11211"] {
                #expect(!(try a.sh("setfattr -n user.cache.shared -v '\(url)' thumbnails").succeeded), "\(url)")
            }
            #expect(a.daemonLog.contains("expected a URL such as redis://HOST:PORT/DB"))
            #expect(try a.xattr("thumbnails", "user.cache.shared") == redis.url)
        }
    }

    /// A file over `shared_max_file_size` stays local; the smaller one after it is shared.
    @Test func aFileOverTheLimitIsNotSent() throws {
        let redis = try SharedTierRedis()
        try withSharedMounts(redis) { a, _ in
            _ = try a.mustSucceed("setfattr -n user.cache.shared_max_file_size -v 64K thumbnails")
            _ = try a.mustSucceed("head -c 100000 /dev/zero > thumbnails/big.jpg && printf 'small' > thumbnails/small.jpg")
            try waitUntilSharedBytesWritten(a, bytes: 5)
            #expect(try a.xattr("thumbnails", "user.cache.shared_bytes_written") == "5")
            #expect(try redis.cli(["EXISTS", "cachefs:1:thumbnails/big.jpg"]).output.contains("0"))
        }
    }
}

/// Two mounts (two stores) whose `thumbnails` pools share `redis`.
private func withSharedMounts(_ redis: SharedTierRedis, a argumentsA: [String] = [], b argumentsB: [String] = [],
                              _ body: (MountedStore, MountedStore) throws -> Void) throws {
    try withSharedTierMounts(url: redis.url, a: argumentsA, b: argumentsB, body)
}
