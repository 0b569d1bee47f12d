import Foundation
import Glibc
import Testing

/// What a read-through pool keeps (`admit_max_size`, `admit_min_size`, `admit_after`): a file
/// outside them is read whole and right, counted against nothing, and dropped once fetched;
/// a pin or `persistent` keeps it anyway.
@Suite struct AdmissionTests {
    /// What a fetch's end changes (`not_admitted`, a kept file's usage) may change just after
    /// its reader read the last byte: polled, up to 10 s.
    func expectAfterFetch(_ path: String, _ name: String, _ expected: String, on mount: MountedStore,
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        var seen = ""
        let reached = try Shell.waitUntil(seconds: 10) {
            seen = try mount.xattr(path, name)
            return seen == expected
        }
        #expect(reached, "\(name) of \(path) is \(seen), expected \(expected)", sourceLocation: sourceLocation)
    }

    func expectNotAdmitted(_ expected: String, on mount: MountedStore,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectAfterFetch("data", "user.cache.not_admitted", expected, on: mount, sourceLocation: sourceLocation)
    }

    @Test(arguments: StoreKind.allCases)
    func aFileAboveTheLimitIsReadRightAndNotKept(kind: StoreKind) throws {
        try withOriginMount("file", kind: kind, prepare: { origin in
            try origin.write("big.bin", bytes: 300_000)
            try origin.write("small.bin", bytes: 10_000)
        }) { mount, origin in
            #expect(try mount.xattr("data", "user.cache.admit_max_size") == "0")
            #expect(try mount.xattr("data", "user.cache.admit_after") == "1")
            // Smaller than the file: without admission it would be EFBIG.
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 200K data")
            let refused = try mount.sh("cat data/big.bin > /dev/null")
            #expect(!refused.succeeded && refused.error.contains("File too large"), "\(refused)")
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_max_size -v 100K data")
            #expect(try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same") == "same")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.usage") == "10000")
            try expectNotAdmitted("1", on: mount)
            #expect(try mount.xattr("data/small.bin", "user.cache.state") == "cached")
            // Not kept, so read again from the origin; the kept one is a hit.
            #expect(try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same") == "same")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "3")
            try expectNotAdmitted("2", on: mount)
            #expect(try mount.xattr("data", "user.cache.usage") == "10000")
            let events = try mount.events(waitingUpTo: 5) { $0.contains("not_admitted") }
            #expect(events.contains("\"event\":\"not_admitted\""), "\(events)")
            // The smallest kept: below it, not kept either.
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_min_size -v 20K data")
            try origin.write("tiny.bin", bytes: 5_000)
            #expect(try mount.mustSucceed("cmp data/tiny.bin '\(origin.files)/tiny.bin' && echo same") == "same")
            try expectNotAdmitted("3", on: mount)
            #expect(try mount.xattr("data", "user.cache.usage") == "10000")
        }
    }

    @Test func aFileIsKeptFromItsNthMissOn() throws {
        try withOriginMount("file", prepare: { try $0.write("a.bin", bytes: 50_000) }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_after -v 3 data")
            for round in 1...2 {
                #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
                try expectNotAdmitted(String(round), on: mount)
                #expect(try mount.xattr("data", "user.cache.usage") == "0")
            }
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.usage") == "50000")
            #expect(try mount.xattr("data/a.bin", "user.cache.state") == "cached")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "3")
            // Kept: the next read is a hit.
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == "3")
        }
    }

    /// kill -9 while a file the pool does not keep is being fetched for a reader: the reader
    /// returns, and after the remount the torn file is neither listed nor counted.
    @Test func aKillDuringAFetchNotKeptLeavesNothingTorn() throws {
        try withOriginMount("exec") { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_max_size -v 1M data")
            try origin.holdSlowNames()
            try mount.crashWhileFetching("data/slow.bin", heldBy: origin.hold)
        }
    }

    @Test func aPinKeepsAFileThePoolWouldNot() throws {
        try withOriginMount("file", prepare: { try $0.write("big.bin", bytes: 300_000) }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_max_size -v 100K data")
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 1 data/big.bin")
            #expect(try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same") == "same")
            try expectAfterFetch("data", "user.cache.usage", "300000", on: mount)
            #expect(try mount.xattr("data", "user.cache.not_admitted") == "0")
            #expect(try mount.xattr("data/big.bin", "user.cache.pinned") == "1")
        }
    }

    @Test func badValuesAreRefusedAndTheSettingsPersist() throws {
        try withOriginMount("file") { mount, _ in
            for (name, bad) in [("admit_after", "0"), ("admit_after", "1001"), ("admit_after", "x"),
                                ("admit_window", "0"), ("admit_window", "soon"), ("admit_max_size", "-1"),
                                ("admit_min_size", "big"), ("block_size", "1536K"), ("block_size", "2G"),
                                ("block_size", "abc"), ("cache_control", "2"), ("cache_control", "yes-ish")] {
                let refused = try mount.sh("setfattr -n user.cache.\(name) -v '\(bad)' data")
                #expect(!refused.succeeded && refused.error.contains("Invalid argument"), "\(name)=\(bad): \(refused)")
            }
            #expect(try mount.xattr("data", "user.cache.admit_window") == "3600")
            #expect(try mount.xattr("data", "user.cache.block_size") == String(4 << 20))
            #expect(try mount.xattr("data", "user.cache.cache_control") == "0")
            // 0 fetches whole files; any multiple of 1 MiB up to 1 GiB is a block size.
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 0 data")
            #expect(try mount.xattr("data", "user.cache.block_size") == "0")
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 3M data")
            #expect(try mount.xattr("data", "user.cache.block_size") == String(3 << 20))
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_after -v 2 data")
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_window -v 10m data")
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_max_size -v 64M data")
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 8MiB data")
            _ = try mount.mustSucceed("setfattr -n user.cache.cache_control -v 1 data")
            #expect(try mount.xattr("data", "user.cache.cache_control") == "1")
            try mount.remount()
            #expect(try mount.xattr("data", "user.cache.admit_after") == "2")
            #expect(try mount.xattr("data", "user.cache.admit_window") == "600")
            #expect(try mount.xattr("data", "user.cache.admit_max_size") == String(64 << 20))
            #expect(try mount.xattr("data", "user.cache.block_size") == String(8 << 20))
            #expect(try mount.xattr("data", "user.cache.cache_control") == "1")
            _ = try mount.mustSucceed("setfattr -x user.cache.admit_after data")
            #expect(try mount.xattr("data", "user.cache.admit_after") == "1")
            _ = try mount.mustSucceed("setfattr -x user.cache.block_size data")
            #expect(try mount.xattr("data", "user.cache.block_size") == String(4 << 20))
            _ = try mount.mustSucceed("setfattr -x user.cache.cache_control data")
            #expect(try mount.xattr("data", "user.cache.cache_control") == "0")
        }
    }

    /// An HTTP file small enough to come with its lookup is fetched again at its open when it
    /// is not to be kept (its lookup's bytes are not held), and read right.
    @Test func aSmallHTTPFileNotKeptIsFetchedAtItsOpen() throws {
        try withHTTPOriginMount(prepare: { try $0.write("small.bin", bytes: 10_000) }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.admit_max_size -v 1K data")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(origin.count("GET /small.bin") == 2, "\(origin.requests)")
            #expect(try mount.xattr("data", "user.cache.usage") == "0")
            try expectNotAdmitted("1", on: mount)
        }
    }
}
