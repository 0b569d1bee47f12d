import CacheModel
import DequeModule
import Synchronization

/// Admits fetches: at most `max_fetches` per pool and ``Tunables/fetchLanes`` in all run at
/// once, on the ``BlockingPool``. A fetch not admitted waits in a queue, holding no thread,
/// and starts when a running one ends or a limit goes up.
///
/// Its place in the lock order: docs/ARCHITECTURE.md, "Threads and locks".
final class FetchLimiter: Sendable {
    private struct Waiting {
        let pool: EntryID
        let fetch: @Sendable () -> Void
    }

    private struct State {
        var running: [EntryID: Int] = [:]
        var total = 0
        /// Per pool, in the order they came: a fetch that ends looks at each pool once, not at
        /// every fetch waiting (a prefetch can queue thousands).
        var waiting: [EntryID: Deque<Waiting>] = [:]

        mutating func admit(_ pool: EntryID, limit: Int) -> Bool {
            guard total < Tunables.fetchLanes, running[pool, default: 0] < max(limit, 1) else { return false }
            running[pool, default: 0] += 1
            total += 1
            return true
        }

        /// The waiting fetches that may start now, admitted.
        mutating func admitWaiting(limit: (EntryID) -> Int) -> [Waiting] {
            var started: [Waiting] = []
            for pool in waiting.keys.sorted() {
                let poolLimit = limit(pool)
                while let next = waiting[pool]?.first, admit(pool, limit: poolLimit) {
                    started.append(next)
                    waiting[pool]?.removeFirst()
                }
                if waiting[pool]?.isEmpty == true { waiting[pool] = nil }
            }
            return started
        }
    }

    private let state = Mutex(State())
    private let threads: BlockingPool
    /// A pool's `max_fetches`, read each time a fetch is admitted, so a changed limit applies
    /// to fetches already waiting.
    private let limit: @Sendable (EntryID) -> Int

    init(threads: BlockingPool, limit: @escaping @Sendable (EntryID) -> Int) {
        self.threads = threads
        self.limit = limit
    }

    /// Runs `fetch` on the pool once `pool` has a slot and a lane is free.
    func run(pool: EntryID, _ fetch: @escaping @Sendable () -> Void) {
        let admitted = state.withLock { state in
            if state.admit(pool, limit: limit(pool)) { return true }
            state.waiting[pool, default: []].append(Waiting(pool: pool, fetch: fetch))
            return false
        }
        if admitted { launch(Waiting(pool: pool, fetch: fetch)) }
    }

    /// A pool's limit went up: fetches waiting for a slot look again.
    func limitsChanged() {
        for admitted in state.withLock({ $0.admitWaiting(limit: limit) }) { launch(admitted) }
    }

    private func launch(_ admitted: Waiting) {
        threads.run { [self] in
            admitted.fetch()
            let next = state.withLock { state in
                state.running[admitted.pool, default: 1] -= 1
                state.total -= 1
                return state.admitWaiting(limit: limit)
            }
            for waiting in next { launch(waiting) }
        }
    }
}
