import Foundation

/// State reachable only while holding a lock that threads can also wait on: the
/// `Mutex`-with-closure shape, plus waiting for a condition on the state.
package final class ConditionLock<State>: @unchecked Sendable {
    // @unchecked: `state` is touched only between `condition.lock()` and `unlock()`.
    private let condition = NSCondition()
    private var state: State

    package init(_ initial: State) {
        state = initial
    }

    package func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }

    /// Waits until `ready` holds (or `deadline` passes), then runs `body` in the same hold.
    package func withLock<T>(waitingUntil ready: (State) -> Bool, deadline: Date? = nil,
                     _ body: (inout State) throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        while !ready(state) {
            if let deadline {
                if !condition.wait(until: deadline) { break }
            } else {
                condition.wait()
            }
        }
        return try body(&state)
    }

    /// As `withLock(waitingUntil:)`, but `ready` may write into the state what it waits for,
    /// so that whoever changes the state wakes waiters only when one of them can go on.
    package func withLock<T>(waitingUntilNoted ready: (inout State) -> Bool, _ body: (inout State) throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        while !ready(&state) { condition.wait() }
        return try body(&state)
    }

    /// Wakes every waiter to look at the state again; call after changing it.
    package func broadcast() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
