import CacheModel
import Foundation

/// A dedicated thread that runs one round of work at every tick and at once when woken.
///
/// It is a plain thread, not a Task: the Swift cooperative pool has about two threads here
/// and must never block on disk or index I/O.
final class BackgroundWorker: Sendable {
    private struct State {
        var stopping = false
        var finished = false
        var woken = false
    }

    private let tick: Double
    private let name: String
    private let roundAtStart: Bool
    private let state = ConditionLock(State())

    /// With `roundAtStart` false the first round waits for a tick or a wake.
    init(tick: Double, name: String, roundAtStart: Bool = true) {
        self.tick = tick
        self.name = name
        self.roundAtStart = roundAtStart
    }

    func start(_ round: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            if !roundAtStart { waitForTick() }
            while !state.withLock({ state in
                state.woken = false
                return state.stopping
            }) {
                round()
                waitForTick()
            }
            state.withLock { $0.finished = true }
            state.broadcast()
        }
        thread.name = name
        thread.start()
    }

    private func waitForTick() {
        state.withLock(waitingUntil: { $0.stopping || $0.woken }, deadline: Date(timeIntervalSinceNow: tick)) { _ in }
    }

    /// Asks for a round now (does not wait for it).
    func wake() {
        state.withLock { $0.woken = true }
        state.broadcast()
    }

    /// Stops the thread and waits until its current round is over.
    func stop() {
        state.withLock { $0.stopping = true }
        state.broadcast()
        state.withLock(waitingUntil: { $0.finished }) { _ in }
    }
}
