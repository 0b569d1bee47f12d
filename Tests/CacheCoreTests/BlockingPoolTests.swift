@testable import CacheCore
import CacheModel
import Foundation
import Synchronization
import Testing

/// Fetches and byte removals share one bounded pool of threads; each kind stays within its
/// lanes, and work not admitted waits in a queue without holding a thread.
@Suite struct BlockingPoolTests {
    /// Jobs that block until released, recording how many ran at once.
    private final class Gate: Sendable {
        private let counts = Mutex((running: 0, most: 0, done: 0))
        private let open = DispatchSemaphore(value: 0)
        private let entered = DispatchSemaphore(value: 0)

        func job() {
            counts.withLock { counts in
                counts.running += 1
                counts.most = max(counts.most, counts.running)
            }
            entered.signal()
            open.wait()
            counts.withLock { counts in
                counts.running -= 1
                counts.done += 1
            }
        }

        /// Waits until `count` jobs entered (within 10 s each).
        func waitForEntries(_ count: Int) -> Bool {
            (0..<count).allSatisfy { _ in entered.wait(timeout: .now() + 10) == .success }
        }

        func release(_ count: Int) {
            for _ in 0..<count { open.signal() }
        }

        var running: Int { counts.withLock { $0.running } }
        var most: Int { counts.withLock { $0.most } }
        var done: Int { counts.withLock { $0.done } }

        func waitUntilDone(_ count: Int) -> Bool {
            let deadline = Date(timeIntervalSinceNow: 10)
            while done < count, Date() < deadline { usleep(1000) }
            return done == count
        }
    }

    @Test func aPoolRunsAtMostItsMaxFetchesAndStartsTheRestInOrder() {
        let threads = BlockingPool()
        defer { threads.shutdown() }
        let limiter = FetchLimiter(threads: threads) { _ in 2 }
        let gate = Gate()
        for _ in 0..<5 { limiter.run(pool: 7) { gate.job() } }
        #expect(gate.waitForEntries(2))
        usleep(50_000)
        #expect(gate.running == 2)
        gate.release(5)
        #expect(gate.waitUntilDone(5))
        #expect(gate.most == 2)
    }

    @Test func allPoolsTogetherRunAtMostTheFetchLanes() {
        let threads = BlockingPool()
        defer { threads.shutdown() }
        let limiter = FetchLimiter(threads: threads) { _ in 256 }
        let gate = Gate()
        let jobs = Tunables.fetchLanes + 6
        for index in 0..<jobs { limiter.run(pool: EntryID(index % 3)) { gate.job() } }
        #expect(gate.waitForEntries(Tunables.fetchLanes))
        usleep(50_000)
        #expect(gate.running == Tunables.fetchLanes)
        gate.release(jobs)
        #expect(gate.waitUntilDone(jobs))
        #expect(gate.most == Tunables.fetchLanes)
    }

    @Test func aRaisedLimitStartsWaitingFetches() {
        let threads = BlockingPool()
        defer { threads.shutdown() }
        let limit = Mutex(1)
        let limiter = FetchLimiter(threads: threads) { _ in limit.withLock { $0 } }
        let gate = Gate()
        for _ in 0..<3 { limiter.run(pool: 1) { gate.job() } }
        #expect(gate.waitForEntries(1))
        limit.withLock { $0 = 3 }
        limiter.limitsChanged()
        #expect(gate.waitForEntries(2))
        #expect(gate.running == 3)
        gate.release(3)
        #expect(gate.waitUntilDone(3))
    }

    /// Fetches that fill every fetch lane and wait (as one waiting for the evictor, which
    /// waits for removals, would) leave the removal lanes free.
    @Test func removalsRunWhileEveryFetchLaneIsTaken() {
        let threads = BlockingPool()
        defer { threads.shutdown() }
        let limiter = FetchLimiter(threads: threads) { _ in 256 }
        let gate = Gate()
        for index in 0..<(Tunables.fetchLanes + 4) { limiter.run(pool: EntryID(index)) { gate.job() } }
        #expect(gate.waitForEntries(Tunables.fetchLanes))
        let remover = ByteRemover(threads: threads)
        let removed = Mutex<[EntryID]>([])
        remover.start { ids in removed.withLock { $0 += ids } }
        for batch in 0..<10 { remover.enqueue([EntryID(batch * 2), EntryID(batch * 2 + 1)]) }
        remover.waitUntilIdle()
        #expect(removed.withLock { $0.sorted() } == (0..<20).map { EntryID($0) })
        gate.release(Tunables.fetchLanes + 4)
        #expect(gate.waitUntilDone(Tunables.fetchLanes + 4))
        remover.stop()
    }

    @Test func batchesHandedOverBeforeStartAreRemovedByIt() {
        let threads = BlockingPool()
        defer { threads.shutdown() }
        let remover = ByteRemover(threads: threads)
        remover.enqueue([1, 2])
        remover.enqueue([3])
        let removed = Mutex<[EntryID]>([])
        remover.start { ids in removed.withLock { $0 += ids } }
        remover.waitUntilIdle()
        remover.stop()
        remover.enqueue([4])
        #expect(removed.withLock { $0.sorted() } == [1, 2, 3, 4])
    }
}
