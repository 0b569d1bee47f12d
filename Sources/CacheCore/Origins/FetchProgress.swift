import CacheModel
import Foundation

/// How far one fetch has got: the fetch thread advances it, readers wait on it for the
/// range they ask for. Shared by the fetch table and every handle opened during the fetch,
/// so a reader still learns the outcome after the fetch left the table.
final class FetchProgress: Sendable {
    enum Outcome: Sendable, Equatable {
        case complete
        case failed(CacheError)
    }

    struct State: Sendable {
        var received: Int64 = 0
        var outcome: Outcome?
        /// The least end a waiting reader needs: bytes arriving before it wake nobody (a
        /// fetch stores parts of about 64 KiB, a reader asks for up to 1 MiB).
        var lowestAwaitedEnd = Int64.max
    }

    let total: Int64
    private let state = ConditionLock(State())

    init(total: Int64) {
        self.total = total
    }

    var snapshot: State { state.withLock { $0 } }

    /// Returns once the bytes before `end` are stored (or the fetch completed); throws the
    /// fetch's failure. A read past the end waits for completion.
    func waitForBytes(before end: Int64) throws(CacheError) {
        let needed = min(end, total)
        let outcome = state.withLock(waitingUntilNoted: { state in
            if state.outcome != nil || state.received >= needed { return true }
            state.lowestAwaitedEnd = min(state.lowestAwaitedEnd, needed)
            return false
        }) { $0.outcome }
        if case .failed(let error) = outcome { throw error }
    }

    /// Returns once the fetch ended; throws its failure.
    func waitForCompletion() throws(CacheError) {
        let outcome = state.withLock(waitingUntil: { $0.outcome != nil }) { $0.outcome }
        if case .failed(let error) = outcome { throw error }
    }

    func advance(to received: Int64) {
        let someoneCanGoOn = state.withLock { state -> Bool in
            state.received = received
            guard received >= state.lowestAwaitedEnd else { return false }
            // The woken readers that still lack bytes note their ends again.
            state.lowestAwaitedEnd = .max
            return true
        }
        if someoneCanGoOn { state.broadcast() }
    }

    /// A retry starts over: readers wait again for bytes already counted once.
    func restart() {
        state.withLock { $0.received = 0 }
    }

    func finish(_ outcome: Outcome) {
        state.withLock { $0.outcome = outcome }
        state.broadcast()
    }
}
