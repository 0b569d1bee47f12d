@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// A file an origin shows counts against its pool from the start of its fetch, never from
/// its lookup: a listing of a large origin evicts nothing, and what was never fetched is no
/// victim of any pass and in no figure.
@Suite struct OriginUsageTests {
    private func open(_ store: TestStore, clock: ManualClock, maxSize: Int64, maxAge: Int64? = nil) throws -> CacheEngine {
        try CacheEngine(EngineConfiguration(storePath: store.path,
                                            poolOverrides: [PoolOverride(name: "data", maxSize: maxSize, maxAgeSeconds: maxAge)],
                                            minFree: .bytes(0), clock: clock, accessFlushSeconds: 3600,
                                            sweepSeconds: 3600, pressureCheckSeconds: 3600))
    }

    /// An origin folder of `count` files `o-1`… of `size` bytes each.
    private func origin(files count: Int, size: Int) throws -> TestStore {
        let origin = try TestStore()
        for index in 1...count {
            let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &+ index) })
            #expect(FileManager.default.createFile(atPath: origin.path + "/o-\(index)", contents: bytes))
        }
        return origin
    }

    private func setOrigin(_ engine: CacheEngine, _ pool: EntryID, _ origin: TestStore) throws {
        try engine.setxattr(pool, name: "user.cache.origin", value: Array("file://\(origin.path)".utf8), flags: 0)
    }

    private func waitForFetches(_ engine: CacheEngine, _ ids: [EntryID]) {
        #expect(Shell.waitUntil { ids.allSatisfy { !engine.readThrough.fetches.isUnfinished($0) } })
    }

    @Test func lookupsCountNothingAndOnlyFetchedFilesAreVictims() throws {
        let origin = try origin(files: 20, size: 100_000)
        let store = try TestStore()
        let clock = ManualClock()
        do {
            let engine = try open(store, clock: clock, maxSize: 1_000_000)
            defer { engine.shutdown() }
            let data = try engine.pool("data")
            var local: [EntryID] = []
            for index in 1...3 {
                clock.advance(seconds: 1)
                local.append(try engine.writeFile("local-\(index)", in: data, content: Array(repeating: 7, count: 100_000)))
            }
            try setOrigin(engine, data, origin)
            clock.advance(seconds: 1)
            // Two megabytes shown, twice the pool: nothing counted, nothing evicted.
            var shown: [EntryID] = []
            for index in 1...20 {
                let found = try engine.lookup(parent: data, name: Array("o-\(index)".utf8))
                #expect(found.size == 100_000)
                #expect(found.blocks == 0)
                shown.append(found.id)
            }
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            engine.waitForIndex()
            #expect(try engine.text(data, "user.cache.usage") == "300000")
            #expect(try engine.text(data, "user.cache.files") == "3")
            #expect(try engine.text(data, "user.cache.evicted_files") == "0")
            #expect(Set(try engine.index.leastRecentlyUsed(pool: data, limit: 100).map(\.entryID)) == Set(local))
            // Removing a file never fetched frees nothing it did not hold.
            try engine.unlink(parent: data, name: Array("o-20".utf8))
            #expect(try engine.text(data, "user.cache.usage") == "300000")
            #expect(try engine.text(data, "user.cache.pending_usage") == "0")

            // Reading fetches and counts: 1.1 MB is over the limit, and the victims are the
            // least recently used stored files, down to the low watermark (900 kB).
            clock.advance(seconds: 1)
            for id in shown.prefix(8) {
                #expect(try engine.readAll(id) == (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &+ (shown.firstIndex(of: id)! + 1)) })
            }
            waitForFetches(engine, Array(shown.prefix(8)))
            #expect(try engine.text(data, "user.cache.fetch_ttfb_count") == "8")
            engine.evictor.enforceLimits(of: data, in: engine.eviction)
            #expect(try engine.text(data, "user.cache.usage") == "900000")
            #expect(try engine.text(data, "user.cache.files") == "9")
            #expect(try engine.text(data, "user.cache.evicted_bytes") == "200000")
            #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("local-1".utf8)) }

            // `clear` takes every stored file and leaves the shown ones as they are.
            engine.evictor.clear(pools: [data], in: engine.eviction)
            #expect(try engine.text(data, "user.cache.usage") == "0")
            #expect(try engine.text(data, "user.cache.files") == "0")
            #expect(try engine.text(data, "user.cache.evicted_files") == "11")
            #expect(try engine.text(data, "user.cache.evicted_bytes") == "1100000")
            #expect(try engine.lookup(parent: data, name: Array("o-12".utf8)).id == shown[11])
        }
        let report = try StoreVerifier(storePath: store.path).run(repair: false)
        #expect(report.problems.isEmpty, "\(report.problems)")
    }

    @Test func aFileNeverFetchedNeverExpiresAndOpensLaterAsAFetch() throws {
        let origin = try origin(files: 1, size: 5000)
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try open(store, clock: clock, maxSize: 0, maxAge: 100)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.writeFile("local", in: data, content: Array(repeating: 1, count: 10))
        try setOrigin(engine, data, origin)
        let shown = try engine.lookup(parent: data, name: Array("o-1".utf8))
        clock.advance(seconds: 1000)
        engine.evictor.sweepExpired(in: engine.eviction)
        #expect(try engine.text(data, "user.cache.evicted_files") == "1")
        #expect(try engine.text(data, "user.cache.evicted_bytes") == "10")
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("local".utf8)) }
        // Shown long ago, it is still the same entry, and its open is the fetch.
        #expect(try engine.lookup(parent: data, name: Array("o-1".utf8)).id == shown.id)
        #expect(try engine.readAll(shown.id).count == 5000)
        #expect(try engine.text(data, "user.cache.origin_requests") == "1")
        waitForFetches(engine, [shown.id])
        #expect(try engine.text(data, "user.cache.usage") == "5000")
    }

    @Test func aFileRemovedWhileItsFetchWaitsForASlotLeavesNoBytesBehind() throws {
        let origin = try origin(files: 1, size: 5000)
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), maxSize: 1_000_000)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try setOrigin(engine, data, origin)
        try engine.setxattr(data, name: "user.cache.max_fetches", value: Array("1".utf8), flags: 0)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        engine.readThrough.fetchLimiter.run(pool: data) {
            held.signal()
            release.wait()
        }
        held.wait()
        let shown = try engine.lookup(parent: data, name: Array("o-1".utf8))
        engine.release(try engine.open(shown.id, flags: O_RDONLY))
        engine.forget(shown.id, count: 1)
        try engine.unlink(parent: data, name: Array("o-1".utf8))
        engine.waitForIndex()
        #expect(!store.hasObject(shown.id))
        release.signal()
        waitForFetches(engine, [shown.id])
        #expect(!store.hasObject(shown.id))
        #expect(try engine.text(data, "user.cache.fetch_errors") == "0")
        #expect(try engine.text(data, "user.cache.usage") == "0")
        #expect(try engine.text(data, "user.cache.pending_usage") == "0")
    }

    @Test func aFileFetchedIntoAPersistentDirectoryEvictsNothingForItself() throws {
        let origin = try TestStore()
        try FileManager.default.createDirectory(atPath: origin.path + "/keep", withIntermediateDirectories: true)
        let bytes = Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(FileManager.default.createFile(atPath: origin.path + "/keep/big", contents: bytes))
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), maxSize: 1_000_000)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        for index in 1...5 {
            try engine.writeFile("local-\(index)", in: data, content: Array(repeating: 3, count: 100_000))
        }
        let keep = try engine.mkdir(parent: data, name: Array("keep".utf8), mode: 0o755, caller: tester)
        try engine.setxattr(keep.id, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        try setOrigin(engine, data, origin)
        // Twice the pool, but persistent once complete: no EFBIG, and no room made for it.
        let big = try engine.lookup(parent: keep.id, name: Array("big".utf8))
        #expect(try engine.readAll(big.id).count == 2_000_000)
        waitForFetches(engine, [big.id])
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        #expect(try engine.text(big.id, "user.cache.state") == "persistent")
        #expect(try engine.text(data, "user.cache.persistent_usage") == "2000000")
        #expect(try engine.text(data, "user.cache.usage") == "500000")
        #expect(try engine.text(data, "user.cache.files") == "6")
        #expect(try engine.text(data, "user.cache.evicted_files") == "0")
    }

    @Test func aShownFileLargerThanThePoolIsNowIsEFBIGAtOpenWithoutFetching() throws {
        let origin = try origin(files: 2, size: 5000)
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), maxSize: 1_000_000)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try setOrigin(engine, data, origin)
        let shown = try engine.lookup(parent: data, name: Array("o-1".utf8))
        try engine.setxattr(data, name: "user.cache.max_size", value: Array("4000".utf8), flags: 0)
        #expect(throws: CacheError.fileTooLarge) { try engine.open(shown.id, flags: O_RDONLY) }
        #expect(try engine.text(data, "user.cache.origin_requests") == "0")
        #expect(try engine.text(data, "user.cache.usage") == "0")
        #expect(throws: CacheError.fileTooLarge) { try engine.lookup(parent: data, name: Array("o-2".utf8)) }
    }
}
