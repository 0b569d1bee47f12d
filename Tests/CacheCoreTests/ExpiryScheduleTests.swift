@testable import CacheCore
import CacheModel
import Foundation
import GRDB
import Testing

/// The evictor removes a file at its expiry, not at the next periodic sweep, and finds that
/// expiry through the index, never by a scan.
@Suite struct ExpiryScheduleTests {
    private func open(_ store: TestStore, clock: ManualClock, notifier: RecordingNotifier) throws -> CacheEngine {
        // A sweep every hour: only the next-expiry check can remove the file in time.
        try CacheEngine(EngineConfiguration(storePath: store.path,
                                            poolOverrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: 100)],
                                            minFree: .bytes(0), clock: clock, notifier: notifier,
                                            accessFlushSeconds: 3600, sweepSeconds: 3600, pressureCheckSeconds: 3600))
    }

    @Test func aFileGoesAtItsExpiryAndTheKernelIsTold() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let notifier = RecordingNotifier()
        let engine = try open(store, clock: clock, notifier: notifier)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let short = try engine.writeFile("short", in: data, content: [1])
        try engine.writeFile("long", in: data, content: [1])
        try engine.setxattr(short, name: "user.cache.expiration", value: Array("10s".utf8), flags: 0)
        engine.writer.flush()
        let created = clock.now().nanoseconds
        #expect(try engine.index.earliestExpiry(pool: data, maxAge: 100, basis: .access) == created + 10_000_000_000)
        clock.advance(seconds: 11)
        // The evictor's own thread, whose periodic sweep is an hour away, removes it.
        #expect(Shell.waitUntil(seconds: 3) { notifier.names == ["short"] })
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("short".utf8)) }
        // The kernel can hear of the removal before the writer's group commit: the index is
        // asked once that commit is made.
        engine.waitForIndex()
        #expect(try engine.index.earliestExpiry(pool: data, maxAge: 100, basis: .access) == created + 100_000_000_000)
        clock.advance(seconds: 90)
        #expect(Shell.waitUntil(seconds: 3) { notifier.names == ["short", "long"] })
    }

    @Test func theNextExpiryComesFromAnIndex() throws {
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), notifier: RecordingNotifier())
        defer { engine.shutdown() }
        for basis in AgeBasis.allCases {
            let own = basis == .access ? Schema.ownExpiryByAccess : Schema.ownExpiryByModification
            let column = basis == .access ? "last_access" : "mtime"
            let ownPlan = try plan(engine, """
                SELECT \(own) FROM entry WHERE pool = 2 AND expiration > 0 AND \(Schema.evictable)
                ORDER BY \(own) LIMIT 1
                """)
            #expect(ownPlan.contains("USING INDEX entry_own_expiry_by_") && !ownPlan.contains("TEMP B-TREE"),
                    "\(basis): \(ownPlan)")
            let poolPlan = try plan(engine, """
                SELECT \(column) FROM entry WHERE pool = 2 AND \(Schema.evictable) AND expiration = 0
                ORDER BY \(column) LIMIT 1
                """)
            #expect(poolPlan.contains("USING INDEX") && !poolPlan.contains("TEMP B-TREE"), "\(basis): \(poolPlan)")
        }
    }

    /// The durability thread's query, every 2 s, reads the partial index of files not yet
    /// durable, not every row of the store.
    @Test func theDurabilityQueryReadsOnlyTheFilesNotYetDurable() throws {
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), notifier: RecordingNotifier())
        defer { engine.shutdown() }
        let found = try plan(engine, IndexDatabase.notYetDurableQuery.replacingOccurrences(of: "?", with: "64"))
        #expect(found.contains("entry_not_durable") && !found.contains("entry_by_name"), "\(found)")
    }

    /// The LRU victim queries read the pool's `entry_lru` in order; the index of every pool's
    /// files by last read, which no query used, is gone (each write paid for it).
    @Test func theVictimQueriesReadThePoolsLRUIndex() throws {
        let store = try TestStore()
        let engine = try open(store, clock: ManualClock(), notifier: RecordingNotifier())
        defer { engine.shutdown() }
        for query in [
            "SELECT * FROM entry WHERE pool = 2 AND \(Schema.evictable) ORDER BY last_access LIMIT 10 OFFSET 0",
            "SELECT * FROM entry WHERE pool = 2 AND \(Schema.evictable) AND (last_access, id) > (5, 6) ORDER BY last_access, id LIMIT 10",
        ] {
            let found = try plan(engine, query)
            #expect(found.contains("entry_lru") && !found.contains("TEMP B-TREE"), "\(found)")
        }
        let indexes = try engine.index.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entry'")
        }
        #expect(indexes.contains("entry_lru"))
        #expect(!indexes.contains("entry_global_lru"), "\(indexes)")
    }

    private func plan(_ engine: CacheEngine, _ query: String) throws -> String {
        try engine.index.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query).map { $0["detail"] as String? ?? "" }
                .joined(separator: "; ")
        }
    }
}
