import Foundation
import Testing

/// Bug 9 of issue 9, "figures that mislead": each test failed before its fix.
@Suite struct FiguresTests {
    @Test func aHitIsAnOpenForReadingAndAMissALookupOfAMissingName() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f")
            // The kernel knows the name from the create: these opens send no LOOKUP.
            _ = try mount.mustSucceed("cat data/f data/f data/f > /dev/null; stat data/f > /dev/null; ls -l data > /dev/null")
            #expect(try mount.xattr("data", "user.cache.hits") == "3")
            #expect(try mount.xattr("data", "user.cache.misses") == "0")
            // The create is a miss in no figure: the ratio is 3 / (3 + 0).
            #expect(try mount.xattr("data", "user.cache.hit_ratio") == "1.000")
            let missing = try mount.sh("cat data/absent")
            #expect(!missing.succeeded)
            #expect(try mount.xattr("data", "user.cache.misses") == "1")
            #expect(try mount.xattr("data", "user.cache.hits") == "3")
            #expect(try mount.xattr("data", "user.cache.hit_ratio") == "0.750")
            // `status --json` and the Prometheus metrics show the same figures.
            let json = try mount.mustSucceed("\(MountedStore.executable) status . --json")
            let report = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let data = try #require((report?["pools"] as? [[String: Any]])?.first { $0["name"] as? String == "data" })
            #expect(data["hits"] as? Int == 3 && data["misses"] as? Int == 1 && data["hit_ratio"] as? Double == 0.75,
                    "\(json)")
            let samples = MetricsTests.parse(try mount.mustSucceed("\(MountedStore.executable) status . --format prometheus"))
            #expect(samples["cachefs_pool_hits_total{pool=\"data\"}"] == 3 && samples["cachefs_pool_misses_total{pool=\"data\"}"] == 1
                    && samples["cachefs_pool_hit_ratio{pool=\"data\"}"] == 0.75, "\(samples)")
        }
    }

    @Test func oldestAccessStaysTheOldestAfterTheOldestIsRead() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo a > data/a; sleep 1.1; echo b > data/b; sleep 1.1")
            let b = try mount.xattr("data/b", "user.cache.last_access")
            #expect(try mount.xattr("data", "user.cache.oldest_access") == (try mount.xattr("data/a", "user.cache.last_access")))
            // a is read now, so b is the oldest; within the 2 s before the access batch reaches the index.
            _ = try mount.mustSucceed("cat data/a > /dev/null")
            #expect(try mount.xattr("data", "user.cache.oldest_access") == b)
        }
    }

    @Test func aPinnedFileShowsNoExpiryAndALeaseShowsItsEnd() throws {
        try withMountedStore(arguments: ["--pool", "data=0,1h"]) { mount in
            _ = try mount.mustSucceed("echo x > data/f; echo y > data/g; echo z > data/h")
            #expect(try mount.xattr("data/f", "user.cache.expires_at") != "")
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 1 data/f")
            #expect(try mount.xattr("data/f", "user.cache.expires_at") == "")
            _ = try mount.mustSucceed("setfattr -n user.cache.persistent -v 1 data/g")
            #expect(try mount.xattr("data/g", "user.cache.expires_at") == "")
            // A 2 h lease outlasts the 1 h max age: the file can expire when the lease ends.
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 2h data/h")
            #expect(try mount.xattr("data/h", "user.cache.expires_at") == (try mount.xattr("data/h", "user.cache.pinned")))
        }
    }

    /// `stat` and `ls` are answered from the kernel's caches (1 h timeouts): they agree with
    /// `cat` only if the daemon removes the file when it expires and tells the kernel, so a
    /// name still cached after far less than an hour would fail this. (How soon it goes is
    /// the bench's to measure.)
    @Test func anExpiredFileDisappearsForLsAndStatToo() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f && echo y > data/keep && setfattr -n user.cache.expiration -v 2 data/f")
            _ = try mount.mustSucceed("stat data/f > /dev/null && ls data > /dev/null")
            let gone = try Shell.waitUntil(seconds: 10) { try !mount.sh("stat data/f").succeeded }
            #expect(gone)
            #expect(try mount.mustSucceed("ls data") == "keep")
        }
    }
}
