@testable import CacheCore
import CacheModel
@testable import CacheNames
import Foundation
import GRDB
import Synchronization
import Testing

/// Read times reach the index in two steps: the evictor's periodic step appends them to the
/// access log, and a fold (before a pass picks victims or expiries, at unmount, past
/// `Tunables.accessFoldFiles` files) writes them into the entries' rows. A crash between the
/// two loses none of them: the next mount folds the log.
@Suite struct AccessLogTests {
    private func rowTime(_ engine: CacheEngine, _ id: EntryID) throws -> Int64? {
        try engine.index.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT last_access FROM entry WHERE id = ?", arguments: [id])
        }
    }

    private func logRows(_ engine: CacheEngine) throws -> Int {
        try engine.index.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM access_log") ?? -1 }
    }

    /// A fresh store's engine on a manual clock, shut down after `body`.
    private func withEngine(_ body: (CacheEngine, ManualClock) throws -> Void) throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock)
        defer { engine.shutdown() }
        try body(engine, clock)
    }

    /// Writes files named `names` in data, folds their creation times, and moves the clock on.
    private func filesFolded(_ names: [String], in engine: CacheEngine, clock: ManualClock) throws -> [EntryID] {
        let data = try engine.pool("data")
        let ids = try names.map { try engine.writeFile($0, in: data, content: [1, 2, 3]) }
        engine.eviction.flushAccessTimes()
        clock.advance(seconds: 10)
        return ids
    }

    @Test func aReadIsLoggedAndReachesItsRowAtTheFold() throws {
        try withEngine { engine, clock in
            let ids = try filesFolded(["a", "b"], in: engine, clock: clock)
            let before = try #require(try rowTime(engine, ids[0]))
            _ = try engine.readAll(ids[0])
            let read = try engine.names.recordAsOfNow(ids[0]).lastAccess
            #expect(read > before)

            engine.eviction.logAccessTimes()
            engine.waitForIndex()
            #expect(try rowTime(engine, ids[0]) == before, "the periodic step wrote the read into its row")
            #expect(try logRows(engine) == 1)
            // What the mount shows is the read's time all along.
            #expect(try engine.names.recordAsOfNow(ids[0]).lastAccess == read)

            // Nothing read since: the next periodic step appends nothing.
            engine.eviction.logAccessTimes()
            engine.waitForIndex()
            #expect(try logRows(engine) == 1)

            engine.eviction.flushAccessTimes()
            #expect(try rowTime(engine, ids[0]) == read)
            #expect(try rowTime(engine, ids[1]) == before)
            #expect(try logRows(engine) == 0, "the fold left the log's rows")
        }
    }

    @Test func aCrashKeepsTheLoggedReadsAndTheNextMountFoldsThem() throws {
        let store = try TestStore()
        let clock = ManualClock()
        var ids: [EntryID] = []
        var before: Int64 = 0
        var reads: [Int64] = []
        do {
            let engine = try store.open(clock: clock)
            ids = try filesFolded(["a", "b", "c"], in: engine, clock: clock)
            before = try #require(try rowTime(engine, ids[1]))
            // a, then c read, each logged in its own append; b never read.
            for id in [ids[0], ids[2]] {
                _ = try engine.readAll(id)
                reads.append(try engine.names.recordAsOfNow(id).lastAccess)
                engine.eviction.logAccessTimes()
                clock.advance(seconds: 5)
            }
            engine.waitForIndex()
            #expect(try logRows(engine) == 2)
            #expect(try rowTime(engine, ids[0]) == before)
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        let engine = try store.open(clock: clock)
        defer { engine.shutdown() }
        #expect(try rowTime(engine, ids[0]) == reads[0])
        #expect(try rowTime(engine, ids[1]) == before)
        #expect(try rowTime(engine, ids[2]) == reads[1])
        #expect(try logRows(engine) == 0)
        // The least recently read file goes first, as before the crash: b.
        let order = try engine.index.leastRecentlyUsed(pool: try engine.pool("data"), limit: 3, offset: 0).map(\.entryID)
        #expect(order == [ids[1], ids[0], ids[2]])
    }

    @Test func manyFilesReadFoldAtThePeriodicStep() throws {
        try withEngine { engine, clock in
            let ids = try filesFolded(["a", "b", "c"], in: engine, clock: clock)
            _ = try engine.readAll(ids[0])
            engine.names.logAccessTimes(foldingPast: 2)
            engine.waitForIndex()
            #expect(try logRows(engine) == 1, "one file read of a limit of two: appended")
            _ = try engine.readAll(ids[1])
            let read = try engine.names.recordAsOfNow(ids[1]).lastAccess
            engine.names.logAccessTimes(foldingPast: 2)
            engine.waitForIndex()
            #expect(try logRows(engine) == 0, "two files read: folded")
            #expect(try rowTime(engine, ids[1]) == read)
        }
    }

    /// The periodic sweep goes through every pool (a backstop), but folds only when an expiry
    /// is due by the index; a purge (a sweep of the pools asked for) always folds.
    @Test func aSweepWithNothingDueFoldsNothing() throws {
        try withEngine { engine, clock in
            let id = try filesFolded(["a"], in: engine, clock: clock)[0]
            let before = try #require(try rowTime(engine, id))
            _ = try engine.readAll(id)
            engine.eviction.logAccessTimes()
            engine.evictor.sweepExpired(in: engine.eviction)
            engine.waitForIndex()
            #expect(try rowTime(engine, id) == before, "a sweep with no pool's expiry due folded")
            #expect(try logRows(engine) == 1)
            engine.evictor.purge(pools: [try engine.pool("data")], in: engine.eviction)
            #expect(try rowTime(engine, id)! > before, "a purge did not fold")
            #expect(try logRows(engine) == 0)
        }
    }

    /// A fold of more files than one hold of the namespace takes (`foldTimesPerHold`) moves
    /// them all, and the log goes once, after the last hold.
    @Test func aFoldInSeveralHoldsWritesEveryRow() throws {
        try withEngine { engine, clock in
            let count = Tunables.foldTimesPerHold + 100
            let ids = try filesFolded((0..<count).map { "f\($0)" }, in: engine, clock: clock)
            for id in ids { _ = try engine.readAll(id) }
            let read = try ids.map { try engine.names.recordAsOfNow($0).lastAccess }
            engine.eviction.logAccessTimes()
            engine.waitForIndex()
            #expect(try logRows(engine) == 1)
            engine.eviction.flushAccessTimes()
            #expect(try ids.map { try rowTime(engine, $0) } == read)
            #expect(try logRows(engine) == 0)
            #expect(engine.names.pendingAccessTimes().isEmpty)
        }
    }

    /// A fold writes its times in shares, one per hold of the namespace, and deletes the log's
    /// rows only after the last share. A crash after the first share committed (here: that
    /// share written as the fold's first hold writes it, then the crash) leaves rows half moved
    /// and the whole log: the next mount folds the log again, so every file gets its read,
    /// and the rows already moved keep theirs.
    @Test func aCrashBetweenTheSharesOfAFoldLosesNoLoggedRead() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let count = Tunables.foldTimesPerHold + 100
        var ids: [EntryID] = []
        var reads: [Int64] = []
        var before: Int64 = 0
        do {
            let engine = try store.open(clock: clock)
            ids = try filesFolded((0..<count).map { "f\($0)" }, in: engine, clock: clock)
            before = try #require(try rowTime(engine, ids[count - 1]))
            for id in ids {
                _ = try engine.readAll(id)
                clock.advance(nanoseconds: 1_000_000)
            }
            reads = try ids.map { try engine.names.recordAsOfNow($0).lastAccess }
            engine.eviction.logAccessTimes()
            engine.waitForIndex()
            #expect(try logRows(engine) == 1)
            let firstShare = Array(zip(ids, reads).prefix(Tunables.foldTimesPerHold))
            engine.writer.enqueue(.accessTimes(Dictionary(uniqueKeysWithValues: firstShare)))
            engine.waitForIndex()
            #expect(try rowTime(engine, ids[0]) == reads[0])
            #expect(try rowTime(engine, ids[count - 1]) == before, "the second share was written")
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        let engine = try store.open(clock: clock)
        defer { engine.shutdown() }
        #expect(try ids.map { try rowTime(engine, $0) } == reads)
        #expect(try logRows(engine) == 0)
        let order = try engine.index.leastRecentlyUsed(pool: try engine.pool("data"), limit: 3, offset: 0).map(\.entryID)
        #expect(order == Array(ids.prefix(3)))
    }

    /// A fold lets go of a time only once its inode holds it, and only if no newer read
    /// replaced it meanwhile: that one stays for the next append and fold.
    @Test func aFoldLetsGoOnlyOfTheTimesItMoved() {
        let tracker = AccessTracker()
        tracker.touch([(id: 1, time: 10), (id: 2, time: 20)])
        let snapshot = Array(tracker.snapshot()).sorted { $0.key < $1.key }
        tracker.touch(2, at: 25)     // read again while the fold runs
        tracker.folded(snapshot)
        #expect(tracker.pendingTime(1) == nil)
        #expect(tracker.pendingTime(2) == 25)
        #expect(tracker.unfoldedCount == 1)
        #expect(tracker.takeUnlogged() == [2: 25])
    }

    /// While a fold moves times into the inodes share by share (with other threads let in
    /// between), a file never shows an older time than its read: each time stays in the
    /// tracker until its inode holds it. Several threads read times while one folds.
    @Test func aFileNeverLooksOlderWhileAFoldMovesItsTime() throws {
        try withEngine { engine, clock in
            let count = 4 * Tunables.foldTimesPerHold
            let ids = try filesFolded((0..<count).map { "f\($0)" }, in: engine, clock: clock)
            for id in ids {
                _ = try engine.readAll(id)
                clock.advance(nanoseconds: 1_000)
            }
            let reads = try ids.map { try engine.names.recordAsOfNow($0).lastAccess }
            let folding = Atomic<Bool>(true)
            let olderSeen = Atomic<Int>(0)
            let checks = Atomic<Int>(0)
            let failedLookups = Atomic<Int>(0)
            let checkers = (0..<3).map { lane in
                Thread {
                    var position = lane
                    while folding.load(ordering: .acquiring) {
                        let index = position % count
                        position += 7
                        do {
                            // As getxattr and an open read it: the pending time, then the
                            // record.
                            let record = try engine.names.recordAsOfNow(ids[index])
                            if record.lastAccess < reads[index] {
                                olderSeen.add(1, ordering: .relaxed)
                            }
                        } catch {
                            failedLookups.add(1, ordering: .relaxed)
                        }
                        checks.add(1, ordering: .relaxed)
                    }
                }
            }
            checkers.forEach { $0.start() }
            engine.eviction.flushAccessTimes()
            folding.store(false, ordering: .releasing)
            while checkers.contains(where: { !$0.isFinished }) { usleep(1_000) }
            #expect(checks.load(ordering: .relaxed) > 0)
            #expect(olderSeen.load(ordering: .relaxed) == 0)
            #expect(failedLookups.load(ordering: .relaxed) == 0)
            #expect(try ids.map { try rowTime(engine, $0) } == reads)
            #expect(engine.names.pendingAccessTimes().isEmpty)
        }
    }

    /// `oldest_access` reads the index's rows in order and a pending time where a file has
    /// one. A fold lets go of the times only once the rows hold them (after its commit), so
    /// while it runs the figure never falls back to a row's older time: every file here was
    /// read after the oldest row was written.
    @Test func theOldestAccessNeverLooksOlderWhileAFoldRuns() throws {
        try withEngine { engine, clock in
            let count = 4 * Tunables.foldTimesPerHold
            let ids = try filesFolded((0..<count).map { "f\($0)" }, in: engine, clock: clock)
            let data = try engine.pool("data")
            let created = try #require(engine.attributes.oldestAccess(inPool: data))
            for id in ids { _ = try engine.readAll(id) }
            let folding = Atomic<Bool>(true)
            let olderSeen = Atomic<Int>(0)
            let checks = Atomic<Int>(0)
            let checker = Thread {
                while folding.load(ordering: .acquiring) {
                    if let oldest = engine.attributes.oldestAccess(inPool: data), oldest <= created {
                        olderSeen.add(1, ordering: .relaxed)
                    }
                    checks.add(1, ordering: .relaxed)
                }
            }
            checker.start()
            engine.eviction.flushAccessTimes()
            folding.store(false, ordering: .releasing)
            while !checker.isFinished { usleep(1_000) }
            #expect(checks.load(ordering: .relaxed) > 0)
            #expect(olderSeen.load(ordering: .relaxed) == 0)
            #expect(try #require(engine.attributes.oldestAccess(inPool: data)) > created)
        }
    }

    /// An open judges expiry on the record it took in a hold; a fold that lets go of the
    /// file's read time before the check must not make it look expired. Here the file was
    /// last read 9 s ago, and 10 s before that it was created: with the read, the file has
    /// 91 s left of its max_age of 100 s; without it, it is 19 s old. (Before the fix the
    /// copy kept the row's old time, so after a fold and 82 s the open saw it expired.)
    @Test func aFoldBetweenAnOpensRecordAndItsExpiryCheckKeepsTheRead() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try store.open(clock: clock, overrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: 100)])
        defer { engine.shutdown() }
        let id = try filesFolded(["a"], in: engine, clock: clock)[0]
        _ = try engine.readAll(id)
        let read = try #require(engine.names.pendingAccessTime(of: id))
        let opened = try engine.names.fileToOpen(id)
        engine.eviction.flushAccessTimes()
        #expect(engine.names.pendingAccessTime(of: id) == nil, "the fold let go of the read")
        clock.advance(seconds: 95)
        #expect(engine.names.lastAccess(of: opened) == read)
        #expect(!engine.names.isExpired(opened, at: engine.names.now))
        #expect(try engine.names.recordAsOfNow(id).lastAccess == read)
    }

    /// As in memory, where a fold keeps the newer of the two: a row a fetch or a setting gave a
    /// newer time keeps it when an older read is folded after.
    @Test func aFoldNeverMovesARowBackInTime() throws {
        try withEngine { engine, clock in
            let id = try filesFolded(["a"], in: engine, clock: clock)[0]
            let stored = try #require(try rowTime(engine, id))
            engine.writer.enqueue(.accessTimes([id: stored - 1_000_000_000]))
            engine.waitForIndex()
            #expect(try rowTime(engine, id) == stored)
            engine.writer.enqueue(.accessTimes([id: stored + 1]))
            engine.waitForIndex()
            #expect(try rowTime(engine, id) == stored + 1)
        }
    }

    @Test func aLogRowRoundTripsAndAPartialPairIsIgnored() {
        let times: [EntryID: Int64] = [1: 5, 1 << 40: -1, 7: Int64.max]
        let encoded = AccessLogRow.encode(times)
        #expect(encoded.count == 48)
        let decoded = AccessLogRow.decode(encoded)
        #expect(Dictionary(uniqueKeysWithValues: decoded.map { ($0.id, $0.time) }) == times)
        #expect(AccessLogRow.decode(encoded.prefix(40)).count == 2)
        #expect(AccessLogRow.decode(Data()).isEmpty)
    }
}
