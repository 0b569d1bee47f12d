import Foundation
import Glibc
import Testing

/// A pool whose origin is an HTTP server on loopback (`scripts/lib/origin_http_server.py`):
/// hits and misses, single-flight, early ranged reads, retries, 404, the negative cache,
/// refetch after eviction, dropped connections, wrong lengths, a server that is down, and a
/// fetch cut by kill -9.
///
/// A lookup is a GET (see `HTTPOrigin`): a file of up to 128 KiB comes whole with it; of a
/// larger one the lookup reads only the head, and its first open GETs it again. So a large
/// file's GETs are its lookups plus its fetches.
@Suite struct HTTPOriginTests {
    @Test func aLargeMissIsALookupAndOneFetchAndTheNextReadIsAHit() throws {
        try withHTTPOriginMount(prepare: { origin in
            try origin.write("a.bin", bytes: 300_000)
            try origin.write("sub dir/b%c.txt", bytes: 1234)
        }) { (mount: MountedStore, origin: HTTPOriginFixture) throws in
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("HEAD /a.bin") == 0 && origin.count("GET /a.bin") == 2, "\(origin.requests)")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("GET /a.bin") == 2)
            // Requests that fetched bytes: the lookup's abandoned GET is not one.
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
            #expect(try mount.xattr("data", "user.cache.fetched_bytes") == "300000")
            // A directory is the server's redirect to the name with "/"; each segment is encoded.
            #expect(try mount.mustSucceed("stat -c %F 'data/sub dir'") == "directory")
            #expect(try mount.mustSucceed("cmp 'data/sub dir/b%c.txt' '\(origin.files)/sub dir/b%c.txt' && echo same") == "same")
            #expect(origin.count("GET /sub%20dir/b%25c.txt") == 1, "\(origin.requests)")
            // HTTP cannot list: a pool shows what it has cached.
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "a.bin sub dir")
            #expect(try mount.xattr("data/a.bin", "user.cache.state") == "cached")
            // The version fetched is kept with the entry, read-only, across a remount.
            let version = try origin.version(of: "a.bin")
            try mount.remount()
            #expect(try mount.xattr("data/a.bin", "user.cache.etag") == version.etag)
            #expect(try mount.xattr("data/a.bin", "user.cache.last_modified") == version.lastModified)
            let refused = try mount.sh("setfattr -n user.cache.etag -v x data/a.bin")
            #expect(!refused.succeeded, "\(refused)")
            #expect(try mount.mustSucceed("getfattr -d -m - data/a.bin | grep -c etag") == "1")
        }
    }

    @Test func redirectsAreFollowed() throws {
        try withHTTPOriginMount(prepare: { try $0.write("a.bin", bytes: 70_000) }) { (mount: MountedStore, origin: HTTPOriginFixture) throws in
            #expect(try mount.mustSucceed("cmp data/moved-a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.requests == ["GET /moved-a.bin", "GET /a.bin", "sent GET /a.bin"], "\(origin.requests)")
        }
    }

    @Test func aSmallFileComesWithItsLookupInOneRequest() throws {
        try withHTTPOriginMount(prepare: { try $0.write("small.bin", bytes: 100_000) }) { mount, origin in
            // A stat alone stores it: one GET, no HEAD, counted against the pool at once.
            #expect(try mount.mustSucceed("stat -c %s data/small.bin") == "100000")
            #expect(origin.requests == ["GET /small.bin", "sent GET /small.bin"], "\(origin.requests)")
            #expect(try mount.xattr("data/small.bin", "user.cache.state") == "cached")
            #expect(try mount.xattr("data", "user.cache.usage") == "100000")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
            #expect(try mount.xattr("data", "user.cache.fetch_ttfb_count") == "1")
            // Its first open is the miss's; the next is a hit. Neither asks the server again.
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.hits") == "0")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.hits") == "1")
            #expect(origin.count("GET /small.bin") == 1)
            try mount.remount()
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data/small.bin", "user.cache.etag") == (try origin.version(of: "small.bin")).etag)
            #expect(origin.count("GET /small.bin") == 1)
        }
    }

    @Test func eightConcurrentReadersCauseOneGET() throws {
        try withHTTPOriginMount(prepare: { try $0.write("big.bin", bytes: 3 << 20) }) { mount, origin in
            let expected = try mount.mustSucceed("sha256sum < '\(origin.files)/big.bin'")
            let sums = try mount.mustSucceed("""
                for i in 1 2 3 4 5 6 7 8; do (sha256sum < data/big.bin > /tmp/$$.$i) & done; wait
                cat /tmp/$$.* | sort -u; rm -f /tmp/$$.*
                """)
            #expect(sums == expected)
            // The lookup's GET and one fetch.
            #expect(origin.count("GET /big.bin") == 2, "\(origin.requests)")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
        }
    }

    @Test func aReaderWaitsOnlyForItsRange() throws {
        try withHTTPOriginMount(prepare: { try $0.holdSlowNames() }) { mount, origin in
            // A whole fetch, streamed to its readers as it comes (blocks: BlockTests).
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 0 data")
            #expect(try mount.mustSucceed("timeout 20 head -c 100 data/slow.bin | wc -c") == "100")
            // The server is still holding the rest of the body back (from the lookup's GET too).
            #expect(origin.count("GET /slow.bin") == 2 && origin.count("sent GET /slow.bin") == 0)
            #expect(try Shell.waitUntil(seconds: 10) {
                try mount.xattr("data/slow.bin", "user.cache.fetching") == "1048576/8388608"
            })
            try FileManager.default.removeItem(atPath: origin.hold)
            let pattern = mount.directory + "/pattern"
            try origin.writeSlowPattern(to: pattern)
            #expect(try mount.mustSucceed("timeout 20 cmp data/slow.bin '\(pattern)' && echo same") == "same")
            #expect(origin.count("sent GET /slow.bin") == 1)
            #expect(try mount.xattr("data/slow.bin", "user.cache.fetching") == "")
        }
    }

    @Test func serverErrorsAreRetriedThenEIOWithAnEvent() throws {
        try withHTTPOriginMount(prepare: { origin in
            try origin.write("fail2-a.bin", bytes: 5000)
            try origin.write("fail99-b.bin", bytes: 5000)
        }) { mount, origin in
            #expect(try mount.mustSucceed("cmp data/fail2-a.bin '\(origin.files)/fail2-a.bin' && echo same") == "same")
            // The lookup's GET answered 500, so a HEAD told the size; then the fetch's two tries.
            #expect(origin.count("GET /fail2-a.bin") == 3 && origin.count("HEAD /fail2-a.bin") == 1, "\(origin.requests)")
            let failed = try mount.sh("cat data/fail99-b.bin")
            #expect(!failed.succeeded && failed.error.contains("Input/output error"))
            #expect(origin.count("GET /fail99-b.bin") == 1 + 3)
            #expect(try mount.xattr("data", "user.cache.fetch_errors") == "1")
            #expect(mount.daemonLog.contains("GET \(origin.url)fail99-b.bin answered 500"))
            let events = try String(contentsOfFile: mount.store + "/events.jsonl", encoding: .utf8)
            #expect(events.contains("\"fetch_failed\"") && events.contains("fail99-b.bin"))
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "fail2-a.bin")
            #expect(try mount.xattr("data", "user.cache.usage") == "5000")
        }
    }

    @Test func aMissingNameIsENOENTAndItsMissIsRemembered() throws {
        try withHTTPOriginMount { mount, origin in
            let missing = try mount.sh("cat data/none.txt")
            #expect(!missing.succeeded && missing.error.contains("No such file"))
            #expect(origin.count("GET /none.txt") == 1)
            try origin.write("none.txt", bytes: 10)
            // Within negative_ttl (30 s) the miss is answered without asking the server.
            let remembered = try mount.sh("cat data/none.txt")
            #expect(!remembered.succeeded && remembered.error.contains("No such file"))
            #expect(origin.count("GET /none.txt") == 1, "\(origin.requests)")
        }
    }

    @Test func anEvictedFileIsFetchedAgain() throws {
        try withHTTPOriginMount(prepare: { try $0.write("a.bin", bytes: 100_000) }) { mount, origin in
            _ = try mount.mustSucceed("cat data/a.bin > /dev/null")
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            #expect(try mount.xattr("data", "user.cache.files") == "0")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("GET /a.bin") == 2)
        }
    }

    @Test func aConnectionDroppedMidBodyIsRetriedAndNeverServedShort() throws {
        try withHTTPOriginMount(prepare: { origin in
            try origin.write("drop2-a.bin", bytes: 400_000)
            try origin.write("dropall-b.bin", bytes: 400_000)
            try origin.write("drop-c.bin", bytes: 50_000)
        }) { mount, origin in
            // The lookup's GET (cut, but its head told the size), the fetch's cut GET, its retry.
            #expect(try mount.mustSucceed("cmp data/drop2-a.bin '\(origin.files)/drop2-a.bin' && echo same") == "same")
            #expect(origin.count("GET /drop2-a.bin") == 3)
            let failed = try mount.sh("cat data/dropall-b.bin > /dev/null")
            #expect(!failed.succeeded && failed.error.contains("Input/output error"))
            #expect(origin.count("GET /dropall-b.bin") == 1 + 3)
            // A small file whose lookup GET was cut: a HEAD tells its size, the fetch GETs it.
            #expect(try mount.mustSucceed("cmp data/drop-c.bin '\(origin.files)/drop-c.bin' && echo same") == "same")
            #expect(origin.count("GET /drop-c.bin") == 2 && origin.count("HEAD /drop-c.bin") == 1, "\(origin.requests)")
            #expect(try mount.mustSucceed("LC_ALL=C ls data | tr '\\n' ' '") == "drop-c.bin drop2-a.bin")
            #expect(try mount.xattr("data", "user.cache.usage") == "450000")
        }
    }

    @Test func aWrongLengthIsEIOAndNothingIsStored() throws {
        try withHTTPOriginMount(prepare: { origin in
            try origin.write("wronglen-a.bin", bytes: 300_000)
            try origin.write("nolength-b.bin", bytes: 10_000)
        }) { mount, origin in
            // The lookup's GET announced the whole file, the fetch's GET half of it.
            let short = try mount.sh("cat data/wronglen-a.bin > /dev/null")
            #expect(!short.succeeded && short.error.contains("Input/output error"))
            // Not retried: the origin would send the same again.
            #expect(origin.count("GET /wronglen-a.bin") == 2)
            #expect(mount.daemonLog.contains("150000 bytes, 300000 announced"))
            // No Content-Length on the GET nor the HEAD: the size is unknown, so it is not shown.
            let unknown = try mount.sh("cat data/nolength-b.bin > /dev/null")
            #expect(!unknown.succeeded && unknown.error.contains("Input/output error"))
            #expect(origin.count("GET /nolength-b.bin") == 1 && origin.count("HEAD /nolength-b.bin") == 1)
            #expect(mount.daemonLog.contains("answered without a Content-Length"))
            #expect(try mount.mustSucceed("ls data | wc -l") == "0")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            let objects = try Shell.bash("find '\(mount.store)/objects' -type f -size +0 | wc -l").output
            #expect(objects.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        }
    }

    @Test func aServerThatIsDownIsEIOWithAClearLogLine() throws {
        try withHTTPOriginMount(prepare: { try $0.write("a.bin", bytes: 100) }) { mount, origin in
            origin.stop()
            let refused = try mount.sh("cat data/a.bin")
            #expect(!refused.succeeded && refused.error.contains("Input/output error"))
            #expect(mount.daemonLog.contains("origin lookup of a.bin failed: GET \(origin.url)a.bin: connection failed: Connection refused"),
                    "\(mount.daemonLog)")
            // The URL stays set: the pool works again once the server is back (on another port).
            try origin.start()
            _ = try mount.mustSucceed("setfattr -n user.cache.origin -v '\(origin.url)' data")
            #expect(try mount.mustSucceed("wc -c < data/a.bin") == "100")
        }
    }

    @Test func aFetchInFlightEndsPromptlyAtUnmount() throws {
        try withHTTPOriginMount(prepare: { try $0.holdSlowNames() }) { mount, origin in
            // A whole fetch, streamed to its readers as it comes (blocks: BlockTests).
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 0 data")
            #expect(try mount.mustSucceed("timeout 20 head -c 100 data/slow.bin | wc -c") == "100")
            // The server holds the body back (for longer than the read timeout if need be);
            // unmounting cancels the request instead of waiting for it.
            #expect(try mount.unmount() == 0)
            #expect(origin.count("sent GET /slow.bin") == 0)
            try mount.mount()
            #expect(try mount.mustSucceed("ls data | wc -l") == "0")
        }
    }

    @Test func aFetchCutByKillIsNeverServedAfterRemount() throws {
        try withHTTPOriginMount(prepare: { try $0.holdSlowNames() }) { mount, origin in
            // A whole fetch, streamed to its readers as it comes (blocks: BlockTests).
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 0 data")
            try mount.crashWhileFetching("data/slow.bin", heldBy: origin.hold)
            let pattern = mount.directory + "/pattern"
            try origin.writeSlowPattern(to: pattern)
            #expect(try mount.mustSucceed("timeout 20 cmp data/slow.bin '\(pattern)' && echo same") == "same")
            // A lookup's GET and a fetch before the kill, the same after the remount.
            #expect(origin.count("GET /slow.bin") == 4)
        }
    }
}
