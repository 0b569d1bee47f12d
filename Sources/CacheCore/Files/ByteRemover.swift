import CacheModel
import DequeModule
import Foundation

/// Removes the bytes of removed files once the commit that left their rows nameless is done,
/// on the ``BlockingPool``. Freeing blocks can wait on the disk, and the index writer, which
/// every `fsync` waits for, must not wait with it; up to ``Tunables/removalLanes`` batches
/// run at once, so an eviction pass frees bytes as fast as it takes names.
///
/// Each batch runs `remove` whole (its bytes, then its rows), but batches overlap.
/// `waitUntilIdle` returns once every batch handed over so far is done.
final class ByteRemover: Sendable {
    private struct State {
        var remove: (@Sendable ([EntryID]) -> Void)?
        var batches: Deque<[EntryID]> = []
        /// Lanes taken: jobs on the pool that take batches until none waits.
        var lanesTaken = 0
        var stopping = false

        /// Takes the lanes the waiting batches need; returns how many jobs to submit.
        mutating func takeLanes() -> Int {
            guard remove != nil else { return 0 }
            let wanted = min(batches.count, Tunables.removalLanes) - lanesTaken
            guard wanted > 0 else { return 0 }
            lanesTaken += wanted
            return wanted
        }
    }

    private let state = ConditionLock(State())
    private let threads: BlockingPool

    init(threads: BlockingPool) {
        self.threads = threads
    }

    /// Batches handed over before start wait for it.
    func start(_ remove: @escaping @Sendable ([EntryID]) -> Void) {
        let jobs = state.withLock { state in
            state.remove = remove
            return state.takeLanes()
        }
        submit(jobs)
    }

    /// Hands a batch over; once stopping, it is removed on the caller's thread.
    func enqueue(_ ids: [EntryID]) {
        guard !ids.isEmpty else { return }
        let (inline, jobs) = state.withLock { state -> ((@Sendable ([EntryID]) -> Void)?, Int) in
            if state.stopping { return (state.remove, 0) }
            state.batches.append(ids)
            return (nil, state.takeLanes())
        }
        if let inline { inline(ids) }
        submit(jobs)
    }

    /// Returns once every batch handed over before the call has been removed.
    func waitUntilIdle() {
        state.withLock(waitingUntil: { $0.batches.isEmpty && $0.lanesTaken == 0 }) { _ in }
    }

    /// Finishes the batches waiting; later batches are removed on their caller's thread.
    func stop() {
        state.withLock { $0.stopping = true }
        waitUntilIdle()
    }

    /// As a crash would: batches not started are left (recovery finishes their nameless
    /// rows); returns once the running ones ended.
    func abandon() {
        state.withLock { state in
            state.batches.removeAll()
            state.remove = nil
            state.stopping = true
        }
        state.withLock(waitingUntil: { $0.lanesTaken == 0 }) { _ in }
    }

    private func submit(_ jobs: Int) {
        for _ in 0..<jobs {
            threads.run { [self] in drain() }
        }
    }

    /// One lane's job: removes batches until none waits, then gives its lane back.
    private func drain() {
        while let (batch, remove) = state.withLock({ state -> ([EntryID], @Sendable ([EntryID]) -> Void)? in
            guard let remove = state.remove, !state.batches.isEmpty else {
                state.lanesTaken -= 1
                return nil
            }
            return (state.batches.removeFirst(), remove)
        }) {
            remove(batch)
        }
        state.broadcast()
    }
}
