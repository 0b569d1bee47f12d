import Foundation
import Glibc
import Testing

/// Copies that stay current (`revalidate`, `stale_if_error`): an open past `revalidate` asks
/// the origin whether the file changed; a change is seen by the next open, never by a reader
/// that has the old version open; an origin that cannot be asked fails the open (EIO) unless
/// `stale_if_error` covers the copy. Against a `file://` origin (its version is the file's
/// inode, size and mtime) and nginx (a conditional HEAD, 304 when unchanged).
@Suite struct FreshnessTests {
    @Test(arguments: StoreKind.allCases)
    func aChangeIsSeenPastRevalidateAndAnOpenReaderKeepsItsVersion(kind: StoreKind) throws {
        try withOriginMount("file", kind: kind, prepare: { origin in
            try "version one\n".write(toFile: origin.files + "/a.txt", atomically: false, encoding: .utf8)
        }) { mount, origin in
            #expect(try mount.xattr("data", "user.cache.revalidate") == "never")
            #expect(try mount.xattr("data", "user.cache.stale_if_error") == "0")
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            // Rewritten in place: the same inode, another size and mtime.
            _ = try mount.mustSucceed("printf 'version two, longer\\n' > '\(origin.files)/a.txt'")
            // `never` (the default) trusts the copy; so does a `revalidate` not yet past.
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 1h data")
            #expect(try mount.mustSucceed("cat data/a.txt") == "version one")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "0")
            // A reader opened the old version; then every open asks.
            let seen = try mount.mustSucceed("""
                exec 3< data/a.txt
                setfattr -n user.cache.revalidate -v 0 data
                cat data/a.txt
                cat <&3
                """)
            #expect(seen == "version two, longer\nversion one")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "1")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            let events = try mount.events(waitingUpTo: 5) { $0.contains("changed_at_origin") }
            #expect(events.contains("\"event\":\"changed_at_origin\""), "\(events)")
            // Unchanged: asked again, served from the copy, not fetched.
            #expect(try mount.mustSucceed("cat data/a.txt") == "version two, longer")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "2")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "2")
            // Replaced by a rename (another inode) with the same size: a change too.
            _ = try mount.mustSucceed("""
                printf 'version 3, longer!!\\n' > '\(origin.files)/new' && mv '\(origin.files)/new' '\(origin.files)/a.txt'
                """)
            #expect(try mount.mustSucceed("cat data/a.txt") == "version 3, longer!!")
            // Gone from the origin: the copy goes too.
            try FileManager.default.removeItem(atPath: origin.files + "/a.txt")
            let gone = try mount.sh("cat data/a.txt")
            #expect(!gone.succeeded && gone.error.contains("No such file"), "\(gone)")
        }
    }

    /// `cache_control 1`: nginx's `Cache-Control` stands for the pool's word: `max-age` trusts
    /// a copy although `revalidate` is 0, `no-cache` asks at every open although it is
    /// `never`, `no-store` is served and not kept. Off (the default), none of it counts.
    @Test func cacheControlIsHonouredWhereThePoolAsks() throws {
        try withNginxOriginMount(prepare: { origin in
            for name in ["maxage/a.bin", "nostore/a.bin", "nostore/b.bin", "nocache/a.bin"] {
                try writeRandomFile(origin.files + "/" + name, bytes: 300_000)
            }
        }) { mount, origin in
            func same(_ name: String) throws -> Bool {
                try mount.mustSucceed("cmp data/\(name) '\(origin.files)/\(name)' && echo same") == "same"
            }
            #expect(try mount.xattr("data", "user.cache.cache_control") == "0")
            #expect(try same("nostore/a.bin"))
            #expect(try mount.mustSucceed("ls data/nostore") == "a.bin")
            _ = try mount.mustSucceed("setfattr -n user.cache.cache_control -v 1 data")
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 0 data")
            #expect(try same("maxage/a.bin") && same("maxage/a.bin"))
            #expect(try mount.xattr("data", "user.cache.revalidations") == "0")
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v never data")
            #expect(try same("nocache/a.bin") && same("nocache/a.bin"))
            #expect(try mount.xattr("data", "user.cache.revalidations") == "1")
            #expect(origin.count("HEAD /nocache/a.bin 304") == 1, "\(origin.requests)")
            #expect(try same("nostore/b.bin"))
            var notAdmitted = ""
            _ = try Shell.waitUntil(seconds: 5) {
                notAdmitted = try mount.xattr("data", "user.cache.not_admitted")
                return notAdmitted == "1"
            }
            #expect(notAdmitted == "1")
            #expect(try mount.mustSucceed("ls data/nostore") == "a.bin")
            #expect(try same("nostore/b.bin"))
            // Each read: its lookup (206, the first 128 KiB: all of it) and its fetch (200).
            #expect(origin.count("GET /nostore/b.bin 206") == 2 && origin.count("GET /nostore/b.bin 200") == 2,
                    "\(origin.requests)")
        }
    }

    @Test func theSettingsRefuseBadValuesAndPersist() throws {
        try withOriginMount("file") { mount, _ in
            for (name, bad) in [("revalidate", "soon"), ("revalidate", "-5"), ("stale_if_error", "never"),
                                ("stale_if_error", "x")] {
                let refused = try mount.sh("setfattr -n user.cache.\(name) -v '\(bad)' data")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(name)=\(bad): \(refused)")
            }
            #expect(try mount.xattr("data", "user.cache.revalidate") == "never")
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 5m data")
            _ = try mount.mustSucceed("setfattr -n user.cache.stale_if_error -v 1d data")
            try mount.remount()
            #expect(try mount.xattr("data", "user.cache.revalidate") == "300")
            #expect(try mount.xattr("data", "user.cache.stale_if_error") == "86400")
            let set = try Shell.run([MountedStore.executable, "set", mount.path("data"), "revalidate", "never"])
            #expect(set.succeeded, "\(set)")
            #expect(try mount.xattr("data", "user.cache.revalidate") == "never")
        }
    }

    /// nginx answers a conditional HEAD with 304 while the file is the one fetched, 200 with
    /// another `ETag` once it changed (nginx's ETag is the mtime in seconds and the size, so
    /// the change sets another mtime).
    @Test(arguments: StoreKind.allCases)
    func nginxIsAskedWithAConditionalRequest(kind: StoreKind) throws {
        try withNginxOriginMount(kind: kind, prepare: { origin in
            try writeRandomFile(origin.files + "/a.bin", bytes: 300_000)
        }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 0 data")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("HEAD /a.bin 304") == 0)
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("HEAD /a.bin 304") == 1, "\(origin.requests)")
            let fetches = origin.requests.filter { $0.hasPrefix("GET /a.bin") }.count
            try writeRandomFile(origin.files + "/a.bin", bytes: 300_000)
            _ = try mount.mustSucceed("touch -d '2001-02-03 04:05:06' '\(origin.files)/a.bin'")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.count("HEAD /a.bin 200") == 1, "\(origin.requests)")
            // The new version is a new file: its lookup's GET and its fetch's (see `HTTPOrigin`).
            #expect(origin.requests.filter { $0.hasPrefix("GET /a.bin") }.count == fetches + 2, "\(origin.requests)")
            #expect(try mount.xattr("data", "user.cache.revalidations") == "2")
        }
    }

    /// The origin down: EIO without `stale_if_error`; with it, the copy is served, counted and
    /// logged as an event. The copy stays either way. With `kernel_hits` (the default) it is
    /// the lookup that asks the origin, so the name itself answers EIO meanwhile (a `getfattr`
    /// too); with `kernel_hits=off` only the open does.
    @Test(arguments: [[], ["-o", "kernel_hits=off"]])
    func anOriginThatCannotBeAskedFailsTheOpenUnlessStaleIfErrorCoversIt(options: [String]) throws {
        let lookupAsks = options.isEmpty
        try withNginxOriginMount(arguments: options, prepare: { origin in
            try writeRandomFile(origin.files + "/a.bin", bytes: 50_000)
        }) { mount, origin in
            let expected = try mount.mustSucceed("sha256sum < '\(origin.files)/a.bin'")
            #expect(try mount.mustSucceed("sha256sum < data/a.bin") == expected)
            _ = try mount.mustSucceed("setfattr -n user.cache.revalidate -v 0 data")
            origin.stop()
            let refused = try mount.sh("cat data/a.bin > /dev/null")
            #expect(!refused.succeeded && refused.error.contains("Input/output error"), "\(refused)")
            #expect(try mount.xattr("data", "user.cache.stale_served") == "0")
            let state = try mount.sh("getfattr --only-values -n user.cache.state data/a.bin")
            if lookupAsks {
                #expect(!state.succeeded && state.error.contains("Input/output error"), "\(state)")
            } else {
                #expect(state.output == "cached", "\(state)")
            }
            _ = try mount.mustSucceed("setfattr -n user.cache.stale_if_error -v 1h data")
            #expect(try mount.mustSucceed("sha256sum < data/a.bin") == expected)
            #expect(try mount.xattr("data", "user.cache.stale_served") == "1")
            let events = try mount.events(waitingUpTo: 5) { $0.contains("served_stale") }
            #expect(events.contains("\"event\":\"served_stale\""), "\(events)")
            let metrics = try Shell.run([MountedStore.executable, "status", mount.mountpoint, "--format", "prometheus"])
            #expect(metrics.output.contains("cachefs_pool_stale_served_total{pool=\"data\"} 1"), "\(metrics.output)")
            // (With kernel_hits each lookup of the name while the origin is down serves the copy
            // stale and counts: this one too, so it comes last.)
            #expect(try mount.xattr("data/a.bin", "user.cache.state") == "cached")
        }
    }
}
