import Foundation
import Testing

@Suite struct XattrTests {
    @Test func cacheFlagsAndUserAttributesRoundTrip() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f")
            _ = try mount.mustSucceed("setfattr -n user.cache.persistent -v 1 data/f")
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 1 data/f")
            _ = try mount.mustSucceed("setfattr -n user.cache.expiration -v 2h data/f")
            _ = try mount.mustSucceed("setfattr -n user.foo -v bar data/f")
            #expect(try mount.xattr("data/f", "user.cache.persistent") == "1")
            #expect(try mount.xattr("data/f", "user.cache.pinned") == "1")
            #expect(try mount.xattr("data/f", "user.cache.expiration") == "7200")
            #expect(try mount.xattr("data/f", "user.foo") == "bar")
            let all = try mount.mustSucceed("getfattr -d -m - data/f")
            for name in ["user.cache.persistent", "user.cache.pinned", "user.cache.expiration", "user.cache.last_access",
                         "user.cache.state", "user.cache.expires_at", "user.foo"] {
                #expect(all.contains(name + "="), "\(name) missing from: \(all)")
            }
            _ = try mount.mustSucceed("setfattr -x user.cache.pinned data/f")
            #expect(try mount.xattr("data/f", "user.cache.pinned") == "0")
        }
    }

    @Test func badValuesAndUnknownNamesAreEINVALAndKeepTheOldValue() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f && setfattr -n user.cache.pinned -v 1 data/f")
            let attempts = [
                "user.cache.pinned banana", "user.cache.persistent 7", "user.cache.expiration soon",
                "user.cache.colour 1", "user.cache.last_access 0", "user.cache.state cached",
            ]
            for attempt in attempts {
                let parts = attempt.split(separator: " ")
                let result = try mount.sh("setfattr -n \(parts[0]) -v \(parts[1]) data/f")
                #expect(!result.succeeded && result.error.contains("Invalid argument"), "\(attempt): \(result.error)")
            }
            #expect(try mount.xattr("data/f", "user.cache.pinned") == "1")
            #expect(try mount.xattr("data/f", "user.cache.persistent") == "0")
            let other = try mount.sh("setfattr -n trusted.x -v 1 data/f")
            #expect(!other.succeeded)
            #expect(mount.daemonLog.contains("refused user.cache.pinned=banana"))
        }
    }

    @Test func catMovesLastAccessButStatAndLsDoNot() throws {
        try withMountedStore { mount in
            _ = try mount.mustSucceed("echo x > data/f")
            let first = try mount.xattr("data/f", "user.cache.last_access")
            _ = try mount.mustSucceed("sleep 1.1; stat data/f >/dev/null; ls -l data >/dev/null; getfattr -d data/f >/dev/null")
            #expect(try mount.xattr("data/f", "user.cache.last_access") == first)
            _ = try mount.mustSucceed("cat data/f >/dev/null")
            let second = try mount.xattr("data/f", "user.cache.last_access")
            #expect(second > first)
            // It reaches the index: still there after a remount.
            try mount.remount()
            #expect(try mount.xattr("data/f", "user.cache.last_access") == second)
        }
    }
}
