import Foundation
import Glibc
import Testing

/// A pool whose origin is a directory (`file://`): hits, misses, single-flight, the negative
/// cache, refetch after eviction, EFBIG without fetching, the policy as an xattr.
@Suite struct FileOriginTests {
    @Test func eightConcurrentReadersShareOneFetchAndTheNextOpenIsAHit() throws {
        try withOriginMount("file", prepare: { origin in
            try origin.write("big.bin", bytes: 3 << 20)
            try origin.write("photos/a.jpg", bytes: 5000)
        }) { mount, origin in
            let expected = try mount.mustSucceed("sha256sum < '\(origin.files)/big.bin'")
            let sums = try mount.mustSucceed("""
                for i in 1 2 3 4 5 6 7 8; do (sha256sum < data/big.bin > /tmp/$$.$i) & done; wait
                cat /tmp/$$.* | sort -u; rm -f /tmp/$$.*
                """)
            #expect(sums == expected)
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "1")
            #expect(try mount.xattr("data", "user.cache.fetched_bytes") == String(3 << 20))
            // A directory of the origin is a directory here; names beneath go to its subpath.
            #expect(try mount.mustSucceed("stat -c %F data/photos") == "directory")
            #expect(try mount.mustSucceed("cmp data/photos/a.jpg '\(origin.files)/photos/a.jpg' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            let hitsBefore = Int(try mount.xattr("data", "user.cache.hits")) ?? -1
            #expect(try mount.mustSucceed("sha256sum < data/big.bin") == expected)
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            #expect(Int(try mount.xattr("data", "user.cache.hits")) == hitsBefore + 1)
            #expect(try mount.xattr("data/big.bin", "user.cache.state") == "cached")
            #expect(try mount.xattr("data", "user.cache.usage") == String((3 << 20) + 5000))
            let metrics = try Shell.run([MountedStore.executable, "status", mount.mountpoint, "--format", "prometheus"])
            #expect(metrics.output.contains("cachefs_pool_origin_requests_total{pool=\"data\"} 2"), "\(metrics.output)")
            #expect(metrics.output.contains("cachefs_pool_fetched_bytes_total{pool=\"data\"} \((3 << 20) + 5000)"))
            // Fetched files are ordinary cached files: they survive a remount without the origin.
            try mount.remount()
            try FileManager.default.removeItem(atPath: origin.files + "/big.bin")
            #expect(try mount.mustSucceed("sha256sum < data/big.bin") == expected)
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
        }
    }

    @Test func aNameTheOriginLacksIsENOENTAndRememberedForNegativeTTL() throws {
        try withOriginMount("file") { mount, origin in
            #expect(try mount.xattr("data", "user.cache.negative_ttl") == "30")
            _ = try mount.mustSucceed("setfattr -n user.cache.negative_ttl -v 2s data")
            let first = try mount.sh("cat data/later.txt")
            #expect(!first.succeeded && first.error.contains("No such file"))
            try origin.write("later.txt", bytes: 10)
            // The kernel caches no negative entries here (entry timeout 0 for misses), so
            // this ENOENT is the daemon's memory of the miss.
            let remembered = try mount.sh("cat data/later.txt")
            #expect(!remembered.succeeded && remembered.error.contains("No such file"))
            Thread.sleep(forTimeInterval: 2.5)
            #expect(try mount.mustSucceed("wc -c < data/later.txt") == "10")
        }
    }

    @Test func anEvictedFetchedFileIsFetchedAgain() throws {
        try withOriginMount("file", prepare: { try $0.write("a.bin", bytes: 100_000) }) { mount, origin in
            _ = try mount.mustSucceed("cat data/a.bin > /dev/null")
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            #expect(try mount.xattr("data", "user.cache.files") == "0")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
        }
    }

    @Test func aFileLargerThanThePoolIsEFBIGWithoutFetching() throws {
        try withOriginMount("file", arguments: ["--pool", "data=1M"], prepare: { origin in
            try origin.write("huge.bin", bytes: 2 << 20)
            try origin.write("small.bin", bytes: 1000)
        }) { mount, _ in
            let refused = try mount.sh("cat data/huge.bin > /dev/null")
            #expect(!refused.succeeded && refused.error.contains("File too large"))
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "0")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            #expect(try mount.mustSucceed("wc -c < data/small.bin") == "1000")
        }
    }

    @Test func listingAndStatOfAnOriginLargerThanThePoolEvictNothing() throws {
        try withOriginMount("file", arguments: ["--pool", "data=1M"], prepare: { origin in
            for index in 1...40 { try origin.write("o-\(index)", bytes: 100_000) }
        }) { mount, origin in
            _ = try mount.mustSucceed("cat data/o-1 data/o-2 > /dev/null; head -c 100000 /dev/urandom > data/local")
            #expect(try mount.xattr("data", "user.cache.usage") == "300000")
            // Four megabytes shown, four times the pool: nothing is fetched, counted or evicted.
            #expect(try mount.mustSucceed("ls -l data | grep -c ' 100000 '") == "41")
            _ = try mount.mustSucceed("stat data/* > /dev/null")
            #expect(try mount.mustSucceed("stat -c '%s %b' data/o-40") == "100000 0")
            #expect(try mount.xattr("data/o-40", "user.cache.state") == "origin")
            #expect(try mount.xattr("data", "user.cache.usage") == "300000")
            #expect(try mount.xattr("data", "user.cache.files") == "3")
            #expect(try mount.xattr("data", "user.cache.evicted_files") == "0")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            // du counts what is stored: 300 kB, none of the files only shown.
            let stored = Int(try mount.mustSucceed("du -s --block-size=1000 data | cut -f1")) ?? -1
            #expect(stored >= 300 && stored < 320, "\(stored)")
            #expect(try mount.mustSucceed("cmp data/o-1 '\(origin.files)/o-1' && cmp data/o-2 '\(origin.files)/o-2' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            #expect(try mount.mustSucceed("wc -c < data/local") == "100000")
            // Reading fetches, and what is fetched counts.
            _ = try mount.mustSucceed("for i in 3 4 5 6 7; do cmp data/o-$i '\(origin.files)/o-'$i || exit 1; done")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "7")
            #expect(try mount.xattr("data", "user.cache.usage") == "800000")
            #expect(try mount.xattr("data", "user.cache.files") == "8")
            #expect(try mount.xattr("data", "user.cache.fetch_ttfb_count") == "7")
            #expect(try mount.xattr("data", "user.cache.evicted_files") == "0")
            #expect(try mount.xattr("data/o-7", "user.cache.state") == "cached")
            #expect(try mount.unmount() == 0)
            let verify = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(verify.succeeded, "\(verify.output) \(verify.error)")
        }
    }

    @Test func writesStayLocalAndTheOriginIsAPersistedPoolXattr() throws {
        try withOriginMount("file", prepare: { try $0.write("a.txt", bytes: 10) }) { mount, origin in
            #expect(try mount.xattr("data", "user.cache.origin") == "file://" + origin.files)
            _ = try mount.mustSucceed("echo local > data/a.txt; echo new > data/b.txt")
            #expect(try mount.mustSucceed("cat data/a.txt") == "local")
            #expect(try mount.mustSucceed("stat -c %s '\(origin.files)/a.txt'; ls '\(origin.files)' | tr '\\n' ' '") == "10\na.txt")
            // Set on another pool with setfattr, kept across a remount, removed with -x.
            _ = try mount.mustSucceed("mkdir images && setfattr -n user.cache.origin -v 'file://\(origin.files)' images")
            try mount.remount()
            #expect(try mount.xattr("images", "user.cache.origin") == "file://" + origin.files)
            #expect(try mount.mustSucceed("wc -c < images/a.txt") == "10")
            _ = try mount.mustSucceed("setfattr -x user.cache.origin images")
            #expect(try mount.xattr("images", "user.cache.origin") == "")
            let gone = try mount.sh("cat images/nothing-here")
            #expect(!gone.succeeded && gone.error.contains("No such file"))
            for bad in ["ftp://x/", "file://relative", "file:///no/such/dir", "http:///no-host", "https://h/x?q=1"] {
                let refused = try mount.sh("setfattr -n user.cache.origin -v '\(bad)' images")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(bad)")
            }
            for (name, bad) in [("max_fetches", "0"), ("max_fetches", "x"), ("negative_ttl", "soon")] {
                let refused = try mount.sh("setfattr -n user.cache.\(name) -v '\(bad)' images")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(name)=\(bad)")
            }
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 8 images")
            try mount.remount()
            #expect(try mount.xattr("images", "user.cache.max_fetches") == "8")
            _ = try mount.mustSucceed("setfattr -x user.cache.max_fetches images")
            #expect(try mount.xattr("images", "user.cache.max_fetches") == "4")
            #expect(mount.daemonLog.contains("is not a URL with a host"))
            let viaCLI = try Shell.run([MountedStore.executable, "set", mount.path("images"), "origin", "ftp://x/"])
            #expect(viaCLI.status == 1 && viaCLI.error.contains("expected a URL"), "\(viaCLI.error)")
            let set = try Shell.run([MountedStore.executable, "set", mount.path("images"), "origin", "exec:/bin/true"])
            #expect(set.succeeded && set.output.contains("origin = exec:/bin/true"), "\(set.error)")
        }
    }

    @Test func prefetchFetchesAheadAndExitsOneIfAFileFailed() throws {
        try withOriginMount("file", prepare: { origin in
            try origin.write("a.bin", bytes: 200_000)
            try origin.write("b.bin", bytes: 300_000)
        }) { mount, _ in
            let done = try Shell.run([MountedStore.executable, "prefetch", mount.path("data/a.bin"), mount.path("data/b.bin")])
            #expect(done.succeeded && done.output.isEmpty && done.error.isEmpty, "\(done.error)")
            #expect(try mount.xattr("data", "user.cache.files") == "2")
            #expect(try mount.xattr("data", "user.cache.fetched_bytes") == "500000")
            let failed = try Shell.run([MountedStore.executable, "prefetch", mount.path("data/none.bin")])
            #expect(failed.status == 1 && failed.error.contains("none.bin: No such file"), "\(failed.error)")
        }
    }

    @Test func aListingMergesWhatIsCachedWithWhatTheOriginHas() throws {
        try withOriginMount("file", prepare: { origin in
            try origin.write("a.txt", bytes: 10)
            try origin.write("sub/b.txt", bytes: 20)
            for index in 1...600 { try origin.write("many/file-\(index)", bytes: 1) }
        }) { mount, _ in
            _ = try mount.mustSucceed("echo local > data/c.txt")
            #expect(try mount.mustSucceed("ls data | tr '\\n' ' '") == "a.txt c.txt many sub")
            #expect(try mount.mustSucceed("find data -name 'file-*' | wc -l") == "600")
            #expect(try mount.mustSucceed("find data -type f -not -name 'file-*' | sort | tr '\\n' ' '")
                == "data/a.txt data/c.txt data/sub/b.txt")
            // Listing fetches nothing; reading does, and the name is listed once.
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "0")
            _ = try mount.mustSucceed("cat data/sub/b.txt > /dev/null")
            #expect(try mount.mustSucceed("ls data/sub | tr '\\n' ' '") == "b.txt")
            #expect(try mount.mustSucceed("ls -l data/sub/b.txt | awk '{print $5}'") == "20")
        }
    }
}
