import DequeModule
import Foundation

/// Removes the bytes of removed files once the commit that left their rows nameless is done,
/// on threads of its own. Freeing blocks can wait on the disk (ext4 mounted with `discard`
/// discards them as it frees them), and the index writer, which every `fsync` waits for, must
/// not wait with it; two threads overlap those waits, so an eviction pass frees bytes as fast
/// as it takes names (four were no faster, and took more CPU from concurrent reads).
///
/// Each batch runs `remove` whole (its bytes, then its rows), but batches overlap.
/// `waitUntilIdle` returns once every batch handed over so far is done.
final class ByteRemover: Sendable {
    static let threadCount = 2

    private struct State {
        var remove: (@Sendable ([EntryID]) -> Void)?
        var batches: Deque<[EntryID]> = []
        var running = 0
        var stopping = false
        var threadsLeft = 0
    }

    private let state = ConditionLock(State())

    func start(_ remove: @escaping @Sendable ([EntryID]) -> Void) {
        state.withLock { state in
            state.remove = remove
            state.threadsLeft = Self.threadCount
        }
        for index in 0..<Self.threadCount {
            let thread = Thread { [self] in work() }
            thread.name = "cachefs-remove-\(index)"
            thread.start()
        }
    }

    /// Hands a batch over; once the threads are stopping, it is removed on the caller's thread.
    func enqueue(_ ids: [EntryID]) {
        guard !ids.isEmpty else { return }
        let inline = state.withLock { state -> (@Sendable ([EntryID]) -> Void)? in
            guard !state.stopping else { return state.remove }
            state.batches.append(ids)
            return nil
        }
        if let inline { inline(ids) } else { state.broadcast() }
    }

    /// Returns once every batch handed over before the call has been removed.
    func waitUntilIdle() {
        state.withLock(waitingUntil: { $0.batches.isEmpty && $0.running == 0 }) { _ in }
    }

    /// Finishes the batches waiting, then ends the threads.
    func stop() {
        state.withLock { $0.stopping = true }
        state.broadcast()
        state.withLock(waitingUntil: { $0.threadsLeft == 0 }) { _ in }
    }

    /// As a crash would: batches not started are left (recovery finishes their nameless
    /// rows); returns once the threads ended.
    func abandon() {
        state.withLock { state in
            state.batches.removeAll()
            state.remove = nil
        }
        stop()
    }

    private func work() {
        while let (batch, remove) = state.withLock(waitingUntil: { $0.stopping || !$0.batches.isEmpty }, {
            state -> ([EntryID], @Sendable ([EntryID]) -> Void)? in
            guard !state.batches.isEmpty, let remove = state.remove else { return nil }
            state.running += 1
            return (state.batches.removeFirst(), remove)
        }) {
            remove(batch)
            state.withLock { $0.running -= 1 }
            state.broadcast()
        }
        state.withLock { $0.threadsLeft -= 1 }
        state.broadcast()
    }
}
