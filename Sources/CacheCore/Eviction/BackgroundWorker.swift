import Foundation

/// The evictor's dedicated thread: runs one round of background work at every tick and
/// at once when woken (a write that crossed a pool's limit wakes it).
///
/// It is a plain thread, not a Task: the Swift cooperative pool has about two threads here
/// and must never block on disk or index I/O. It is also the only thread that sends
/// notifications to the kernel, holding no core lock while it does.
final class BackgroundWorker: Sendable {
    private let tick: Double
    private let name: String
    private let condition = NSCondition()
    // Guarded by `condition`.
    private nonisolated(unsafe) var stopping = false
    private nonisolated(unsafe) var finished = false
    private nonisolated(unsafe) var woken = false

    init(tick: Double, name: String = "cachefs-evictor") {
        self.tick = tick
        self.name = name
    }

    func start(_ round: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            condition.lock()
            while !stopping {
                woken = false
                condition.unlock()
                round()
                condition.lock()
                if !stopping && !woken { _ = condition.wait(until: Date(timeIntervalSinceNow: tick)) }
            }
            finished = true
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
    }

    /// Asks for a round now (does not wait for it).
    func wake() {
        condition.lock()
        woken = true
        condition.signal()
        condition.unlock()
    }

    /// Stops the thread and waits until its current round is over.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }
}
