import CacheModel
import DequeModule

/// The files waiting to be written to the shared tier, for its one writer thread. Bounded: a
/// file added to a full queue is refused (the caller counts it), so a burst of writes never
/// holds memory without bound nor waits. A file counts as waiting until its write ends, so a
/// pool's `shared_queue` of 0 means all it queued has been tried.
final class SharedTierQueue: Sendable {
    struct Item: Sendable, Equatable {
        var pool: EntryID
        var id: EntryID
        /// Names the origin's version for a file of an origin pool (``SharedTierKey``).
        var suffix: [UInt8] = []
    }

    private struct State {
        var items = Deque<Item>()
        /// Queued or being written, per pool.
        var waiting: [EntryID: Int] = [:]
        var stopping = false
    }

    let limit: Int
    private let state = ConditionLock(State())

    init(limit: Int = Tunables.sharedQueueLimit) {
        self.limit = limit
    }

    enum Admission { case added, full, stopped }

    /// Queued, or not written: the queue is full, or stops (the mount ends).
    func add(_ item: Item) -> Admission {
        let admission = state.withLock { state -> Admission in
            guard !state.stopping else { return .stopped }
            guard state.items.count < limit else { return .full }
            state.items.append(item)
            state.waiting[item.pool, default: 0] += 1
            return .added
        }
        if admission == .added { state.broadcast() }
        return admission
    }

    /// The next file to write, waiting for one; nil once the queue stops.
    func next() -> Item? {
        state.withLock(waitingUntil: { $0.stopping || !$0.items.isEmpty }) { state in
            state.stopping ? nil : state.items.popFirst()
        }
    }

    /// The write of `item` (taken by ``next()``) ended, whatever its outcome.
    func finished(_ item: Item) {
        state.withLock { state in
            state.waiting[item.pool, default: 1] -= 1
            if state.waiting[item.pool] == 0 { state.waiting[item.pool] = nil }
        }
    }

    func waiting(inPool pool: EntryID) -> Int {
        state.withLock { $0.waiting[pool] ?? 0 }
    }

    /// Drops what waits; ``next()`` answers nil from now on.
    func stop() {
        state.withLock { state in
            state.stopping = true
            state.items.removeAll()
            state.waiting.removeAll()
        }
        state.broadcast()
    }
}
