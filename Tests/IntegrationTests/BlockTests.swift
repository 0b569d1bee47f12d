import Foundation
import Glibc
import Testing

/// Origin files held in blocks (`block_size`, 4 MiB by default): a read fetches the blocks it
/// touches with ranged requests, a sequential reader has a few more fetched ahead, held
/// blocks count against the pool and the coldest go first when it needs room, so a file
/// larger than the pool reads right and the pool stays within its limit. A file read whole
/// (and fitting its pool) becomes an ordinary cached file.
@Suite struct BlockTests {
    /// The pool's usage, polled: blocks are counted by the fetch that stores them.
    func usage(of mount: MountedStore) throws -> Int64 {
        Int64(try mount.xattr("data", "user.cache.usage")) ?? -1
    }

    @Test(arguments: StoreKind.allCases)
    func aFileLargerThanThePoolReadsRightAndThePoolStaysWithinItsLimit(kind: StoreKind) throws {
        try withOriginMount("file", kind: kind, prepare: { try $0.write("big.bin", bytes: 40 << 20) }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 16M data")
            #expect(try mount.mustSucceed("stat -c %s data/big.bin") == String(40 << 20))
            #expect(try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same") == "same")
            #expect(try usage(of: mount) <= 16 << 20)
            let fetching = try mount.xattr("data/big.bin", "user.cache.fetching").split(separator: "/")
            #expect(fetching.count == 2 && fetching[1] == "\(40 << 20)", "\(fetching)")
            #expect((Int64(fetching.first ?? "") ?? .max) <= 16 << 20, "\(fetching)")
            // Reads anywhere in it, each checked against the origin's bytes.
            for skip in [33, 2, 39, 17] {
                let same = try mount.mustSucceed("""
                    cmp <(dd if=data/big.bin bs=1M skip=\(skip) count=1 status=none) \
                        <(dd if='\(origin.files)/big.bin' bs=1M skip=\(skip) count=1 status=none) && echo same
                    """)
                #expect(same == "same", "MiB \(skip)")
                #expect(try usage(of: mount) <= 16 << 20)
            }
            // Not whole, so not a cached file: it stays held in part.
            #expect(try mount.xattr("data", "user.cache.files") == "0")
            let fetched = Int64(try mount.xattr("data", "user.cache.fetched_bytes")) ?? 0
            #expect(fetched >= 40 << 20, "fetched \(fetched)")
        }
    }

    /// A scan of a file larger than the pool cycles through its own blocks: the pool's small
    /// file, read before it, stays cached and is read again with no request.
    @Test func blocksGoBeforeWholeFilesSoAScanKeepsThePoolsFiles() throws {
        try withOriginMount("file", prepare: { origin in
            try origin.write("small.bin", bytes: 1 << 20)
            try origin.write("big.bin", bytes: 40 << 20)
        }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 16M data")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.files") == "1")
            let requests = try mount.xattr("data", "user.cache.origin_requests")
            #expect(try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && echo same") == "same")
            #expect(try mount.xattr("data", "user.cache.origin_requests") == requests)
            #expect(try usage(of: mount) <= 16 << 20)
            // `clear` drops the blocks too.
            _ = try mount.mustSucceed("setfattr -n user.cache.clear -v 1 data")
            #expect(try usage(of: mount) == 0)
        }
    }

    /// A pin, or an open for writing, makes a file held in part whole first; a pin of one
    /// larger than the pool is refused (EFBIG) and leaves it held in part.
    @Test func aPinOrAWriteMakesAFileHeldInPartWhole() throws {
        try withOriginMount("file", prepare: { origin in
            try origin.write("a.bin", bytes: 10 << 20)
            try origin.write("b.bin", bytes: 9 << 20)
            try origin.write("huge.bin", bytes: 40 << 20)
        }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_size -v 32M data")
            _ = try mount.mustSucceed("head -c 1 data/a.bin data/b.bin data/huge.bin > /dev/null")
            #expect(try mount.xattr("data", "user.cache.files") == "0")
            _ = try mount.mustSucceed("setfattr -n user.cache.pinned -v 1 data/a.bin")
            #expect(try mount.xattr("data/a.bin", "user.cache.fetching") == "")
            #expect(try mount.xattr("data/a.bin", "user.cache.pinned") == "1")
            _ = try mount.mustSucceed("printf x | dd of=data/b.bin bs=1 seek=5 conv=notrunc status=none")
            #expect(try mount.xattr("data", "user.cache.files") == "2")
            let expected = try mount.mustSucceed("""
                head -c 5 '\(origin.files)/b.bin' | od -An -tx1; printf x | od -An -tx1
                """)
            #expect(try mount.mustSucceed("head -c 6 data/b.bin | od -An -tx1") == expected.replacingOccurrences(of: "\n", with: ""))
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            let refused = try mount.sh("setfattr -n user.cache.pinned -v 1 data/huge.bin")
            #expect(!refused.succeeded && refused.error.contains("File too large"), "\(refused)")
            #expect(try mount.xattr("data/huge.bin", "user.cache.fetching") != "")
        }
    }

    @Test func aFewBytesOfALargeFileFetchOneBlockAndTheReadAheadAtMost() throws {
        try withOriginMount("file", prepare: { try $0.write("big.bin", bytes: 64 << 20) }) { mount, origin in
            let head = try mount.mustSucceed("""
                cmp <(head -c 1M data/big.bin) <(head -c 1M '\(origin.files)/big.bin') && echo same
                """)
            #expect(head == "same")
            // One block, and at most 3 more read ahead (a sequential reader), all 4 MiB: once
            // the read-ahead is stored, all that was fetched is counted, nothing more.
            var fetched: Int64 = 0, counted: Int64 = 0
            let settled = try Shell.waitUntil(seconds: 10) {
                fetched = Int64(try mount.xattr("data", "user.cache.fetched_bytes")) ?? 0
                counted = try usage(of: mount)
                let held = try mount.xattr("data/big.bin", "user.cache.fetching")
                return fetched == counted && held == "\(fetched)/\(64 << 20)"
            }
            #expect(settled, "fetched \(fetched), counted \(counted)")
            #expect(fetched >= 4 << 20 && fetched <= 16 << 20, "fetched \(fetched)")
        }
    }

    /// Read whole, a file that fits its pool becomes an ordinary cached file: counted once at
    /// its size, and read again with no request. nginx sees ranged GETs (206), one per block.
    @Test(arguments: StoreKind.allCases)
    func aFileReadWholeBecomesACachedFile(kind: StoreKind) throws {
        try withNginxOriginMount(kind: kind, prepare: { try writeRandomFile($0.files + "/a.bin", bytes: 10 << 20) }) { mount, origin in
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            var files = ""
            _ = try Shell.waitUntil(seconds: 5) {
                files = try mount.xattr("data", "user.cache.files")
                return files == "1"
            }
            #expect(files == "1")
            #expect(try mount.xattr("data/a.bin", "user.cache.fetching") == "")
            #expect(try usage(of: mount) == 10 << 20)
            // The lookup's GET of the first 128 KiB (the size from its Content-Range), then one per block.
            let ranged = origin.rangedRequests.filter { $0.hasPrefix("GET /a.bin ") }
            #expect(ranged.sorted() == ["GET /a.bin 206 bytes=0-131071", "GET /a.bin 206 bytes=0-4194303",
                                        "GET /a.bin 206 bytes=4194304-8388607", "GET /a.bin 206 bytes=8388608-10485759"],
                    "\(ranged)")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.rangedRequests.filter { $0.hasPrefix("GET /a.bin ") }.count == ranged.count)
            try mount.remount()
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(origin.rangedRequests.filter { $0.hasPrefix("GET /a.bin ") }.count == ranged.count)
        }
    }

    /// The lookup's `Range: bytes=0-131071` as nginx answers it: a small file comes whole in one
    /// 206 and is stored with its lookup; an empty file (which nginx answers 200, not 416) too.
    /// Read again, neither sends another request.
    @Test func aSmallOrEmptyFileComesWithItsRangedLookup() throws {
        try withNginxOriginMount(prepare: { origin in
            try writeRandomFile(origin.files + "/small.bin", bytes: 10_000)
            try writeRandomFile(origin.files + "/empty.bin", bytes: 0)
        }) { mount, origin in
            for _ in 0..<2 {
                let same = try mount.mustSucceed("cmp data/small.bin '\(origin.files)/small.bin' && cmp data/empty.bin '\(origin.files)/empty.bin' && echo same")
                #expect(same == "same")
            }
            #expect(origin.rangedRequests.filter { $0.hasPrefix("GET /small.bin ") } == ["GET /small.bin 206 bytes=0-131071"],
                    "\(origin.rangedRequests)")
            #expect(origin.rangedRequests.filter { $0.hasPrefix("GET /empty.bin ") } == ["GET /empty.bin 200 bytes=0-131071"],
                    "\(origin.rangedRequests)")
            let sizes = try mount.mustSucceed("stat -c %s data/small.bin data/empty.bin | tr '\\n' ' '")
            #expect(sizes == "10000 0")
        }
    }

    /// A server that ignores `Range` (Python's http.server answers 200 with the whole file):
    /// each block is cut from the whole body, slower but right.
    @Test func anOriginThatIgnoresRangesIsReadRight() throws {
        try withHTTPOriginMount(prepare: { server in try server.write("big.bin", bytes: 9 << 20) }) { mount, origin in
            let same = try mount.mustSucceed("cmp data/big.bin '\(origin.files)/big.bin' && echo same")
            #expect(same == "same")
            let errors = try mount.xattr("data", "user.cache.fetch_errors")
            #expect(errors == "0")
        }
    }

    /// The origin's file changes while blocks of it are held: the next block's `If-Match`
    /// fails (412), the file is dropped, and a reader holding it open gets EIO rather than a
    /// mix of versions. The next open reads the new version whole.
    @Test(arguments: StoreKind.allCases)
    func aChangeMidFileFailsTheOpenReaderAndTheNextOpenSeesTheNewVersion(kind: StoreKind) throws {
        try withNginxOriginMount(kind: kind, prepare: { try writeRandomFile($0.files + "/a.bin", bytes: 20 << 20) }) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.max_fetches -v 1 data")
            // Another size, so nginx's ETag (mtime and size) changes even within a second.
            let script = """
                exec 3< data/a.bin
                dd bs=1M count=1 status=none <&3 | cmp - <(head -c 1M '\(origin.files)/a.bin') || exit 9
                head -c \(19 << 20) /dev/urandom > '\(origin.files)/a.bin'
                dd bs=1M skip=12 count=1 status=none <&3 > /dev/null
                """
            let result = try mount.sh(script)
            #expect(!result.succeeded && result.error.contains("Input/output error"), "\(result)")
            let events = try mount.events(waitingUpTo: 5) { $0.contains("changed_at_origin") }
            #expect(events.contains("\"event\":\"changed_at_origin\""), "\(events)")
            #expect(origin.rangedRequests.contains { $0.hasPrefix("GET /a.bin 412 ") }, "\(origin.rangedRequests)")
            #expect(try mount.mustSucceed("cmp data/a.bin '\(origin.files)/a.bin' && echo same") == "same")
            #expect(try usage(of: mount) == 19 << 20)
        }
    }

    /// A 5xx storm: the block's fetch is retried, then the read fails with EIO; nothing is
    /// counted for it, and the file reads once the origin answers again.
    @Test func aServerErrorStormFailsTheReadAndCountsNothing() throws {
        try withHTTPOriginMount(prepare: { server in try server.write("fail99-big.bin", bytes: 9 << 20) }) { mount, _ in
            let failed = try mount.sh("head -c 1 data/fail99-big.bin")
            #expect(!failed.succeeded && failed.error.contains("Input/output error"), "\(failed)")
            #expect(try usage(of: mount) == 0)
            #expect(try mount.xattr("data", "user.cache.fetch_errors") != "0")
        }
    }

    /// A connection closed mid-block, every time: the block is never served short.
    @Test func aServerThatClosesMidBlockNeverServesAShortBlock() throws {
        try withHTTPOriginMount(prepare: { server in try server.write("dropall-big.bin", bytes: 9 << 20) }) { mount, _ in
            // The server sends half the body: block 0 comes whole, the last block never.
            let failed = try mount.sh("tail -c 1 data/dropall-big.bin")
            #expect(!failed.succeeded && failed.error.contains("Input/output error"), "\(failed)")
            #expect(try usage(of: mount) == 0)
        }
    }

    /// kill -9 while blocks are fetched (one held, the next held up by the origin): the
    /// reader never gets the block that is not whole, and after the remount the file held in
    /// part is neither listed nor counted.
    @Test(arguments: StoreKind.allCases)
    func aKillDuringBlockFetchesLeavesNothingTorn(kind: StoreKind) throws {
        try withOriginServerMount(HTTPOriginFixture.self, kind: kind) { mount, origin in
            _ = try mount.mustSucceed("setfattr -n user.cache.block_size -v 1M data")
            try origin.holdSlowNames()
            try mount.crashWhileFetching("data/slow.bin", heldBy: origin.hold)
        }
    }
}
