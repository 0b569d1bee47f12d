import Foundation
import Glibc
import Testing

/// Pools with an origin and a shared tier (docs/shared-tier.md, "Pools with an origin"): two
/// mounts of two stores with the same origin stand for two machines. A file one fetched from
/// the origin is read by the other from the tier; a file changed at the origin is not served
/// from the tier under its old version.
@Suite(.serialized) struct SharedTierOriginTests {
    /// An `exec:` program names no versions: B's lookup asks the tier first and never runs
    /// the program for what A fetched, not even `--size`.
    @Test func aProgramsFilesFetchedOnOneMountAreReadOnTheOtherWithoutRunningIt() throws {
        let redis = try SharedTierRedis()
        try withSharedTierMounts(url: redis.url) { a, b in
            let origin = try OriginFixture(in: a.directory)
            for name in ["one.jpg", "two.jpg", "three.jpg"] { try origin.write(name, bytes: 30_000) }
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.origin -v 'exec:\(origin.program)' thumbnails")
            }
            for name in ["one.jpg", "two.jpg", "three.jpg"] {
                #expect(try a.mustSucceed("cmp thumbnails/\(name) '\(origin.files)/\(name)' && echo same") == "same")
            }
            #expect(origin.fetchCalls() == 3)
            try waitUntilSharedBytesWritten(a, bytes: 90_000)
            #expect(try a.xattr("thumbnails", "user.cache.shared_misses") == "3")

            for name in ["one.jpg", "two.jpg", "three.jpg"] {
                #expect(try b.mustSucceed("cmp thumbnails/\(name) '\(origin.files)/\(name)' && echo same") == "same")
            }
            #expect(origin.fetchCalls() == 3, "B ran the program to fetch")
            #expect(!b.daemonLog.contains("origin.sh: size"), "B ran the program to look up:\n\(b.daemonLog)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "3")
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_read") == "90000")
            // Read from the tier, stored on B: not written back.
            #expect(try b.xattr("thumbnails", "user.cache.shared_bytes_written") == "0")

            // A name neither has: the tier misses, the program answers (exit 44), ENOENT.
            #expect(try b.sh("cat thumbnails/missing.jpg").error.contains("No such file"))
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "1")
        }
    }

    /// An HTTP origin names versions (ETags): B's fetch asks nginx which version is current
    /// (a HEAD), then the tier for it. A file A shared that changed at the origin since is
    /// fetched from the origin, never served as its old version, and shared as its new one.
    @Test func anHTTPFileIsSharedByItsVersionAndAChangedOneIsFetchedAgain() throws {
        let redis = try SharedTierRedis()
        try withSharedTierMounts(url: redis.url) { a, b in
            let nginx = try NginxOrigin(in: a.directory)
            defer { nginx.stop() }
            // Larger than what comes with the lookup (128 KiB): fetched by a GET of their own.
            try writeRandomFile(nginx.files + "/same.bin", bytes: 300_000)
            try writeRandomFile(nginx.files + "/changed.bin", bytes: 200_000)
            for mount in [a, b] {
                _ = try mount.mustSucceed("setfattr -n user.cache.origin -v '\(nginx.url)' thumbnails")
            }
            for name in ["same.bin", "changed.bin"] {
                #expect(try a.mustSucceed("cmp thumbnails/\(name) '\(nginx.files)/\(name)' && echo same") == "same")
            }
            try waitUntilSharedBytesWritten(a, bytes: 500_000)
            #expect(nginx.count("GET /same.bin 200") == 1, "\(nginx.requests)")

            // Another version at the origin: another size and another mtime, so another ETag.
            let old = try a.mustSucceed("sha256sum < thumbnails/changed.bin")
            try writeRandomFile(nginx.files + "/changed.bin", bytes: 210_000)
            _ = try b.mustSucceed("touch -d '2030-01-01' '\(nginx.files)/changed.bin'")

            #expect(try b.mustSucceed("cmp thumbnails/same.bin '\(nginx.files)/same.bin' && echo same") == "same")
            #expect(nginx.count("GET /same.bin 200") == 1, "B fetched what the tier had: \(nginx.requests)")
            // Each mount's fetch asked for the version first: A before its tier miss, B before its hit.
            #expect(nginx.count("HEAD /same.bin 200") == 2, "\(nginx.requests)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")

            #expect(try b.mustSucceed("cmp thumbnails/changed.bin '\(nginx.files)/changed.bin' && echo same") == "same")
            #expect(try b.mustSucceed("sha256sum < thumbnails/changed.bin") != old)
            #expect(nginx.count("GET /changed.bin 200") == 2, "\(nginx.requests)")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "1")
            #expect(try b.xattr("thumbnails", "user.cache.shared_misses") == "1")
            // B fetched the new version from the origin: it shares it, under its own key.
            try waitUntilSharedBytesWritten(b, bytes: 210_000)
            let keys = try redis.cli(["DBSIZE"]).output
            #expect(keys.contains("3"), "\(keys)")
        }
    }

    /// A server that refuses HEAD (405) cannot tell the version: the tier is skipped, counted as
    /// its error, and the file is fetched from the origin as without a tier, never an EIO.
    @Test func anOriginThatRefusesHEADIsReadWithoutTheTier() throws {
        let redis = try SharedTierRedis()
        try withSharedTierMounts(url: redis.url) { a, _ in
            let nginx = try NginxOrigin(in: a.directory)
            defer { nginx.stop() }
            try writeRandomFile(nginx.files + "/nohead/big.bin", bytes: 200_000)
            _ = try a.mustSucceed("setfattr -n user.cache.origin -v '\(nginx.url)' thumbnails")
            #expect(try a.mustSucceed("cmp thumbnails/nohead/big.bin '\(nginx.files)/nohead/big.bin' && echo same") == "same")
            #expect(nginx.count("HEAD /nohead/big.bin 405") == 1, "\(nginx.requests)")
            #expect(nginx.count("GET /nohead/big.bin 200") == 1, "\(nginx.requests)")
            #expect(try a.xattr("thumbnails", "user.cache.shared_errors") == "1")
            #expect(a.daemonLog.contains("the origin did not tell a file's version"), "\(a.daemonLog)")
        }
    }

    /// The tier down: an origin pool reads from its origin as if it had no tier; errors
    /// are counted, no read fails.
    @Test func aTierDownFallsBackToTheOrigin() throws {
        let redis = try SharedTierRedis()
        try withSharedTierMounts(url: redis.url) { a, b in
            let origin = try OriginFixture(in: a.directory)
            try origin.write("photo.jpg", bytes: 40_000)
            _ = try b.mustSucceed("setfattr -n user.cache.origin -v 'exec:\(origin.program)' thumbnails")
            redis.kill()
            #expect(try b.mustSucceed("cmp thumbnails/photo.jpg '\(origin.files)/photo.jpg' && echo same") == "same")
            #expect(origin.fetchCalls() == 1)
            #expect(try Shell.waitUntil(seconds: 10) { try Int(b.xattr("thumbnails", "user.cache.shared_errors")) ?? 0 >= 2 },
                    "the lookup and the write-behind count an error each")
            #expect(try b.xattr("thumbnails", "user.cache.shared_hits") == "0")
        }
    }
}
