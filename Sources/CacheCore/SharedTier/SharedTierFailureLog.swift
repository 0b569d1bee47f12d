import Foundation
import Logging
import Synchronization

/// The tier's failures in the daemon's log, at most one line per interval (a tier that is
/// down fails every lookup): the first of each interval is written with the number left out
/// since the last line. Every failure is counted in `shared_errors` regardless.
final class SharedTierFailureLog: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var skipped = 0
    }

    private let logger: Logger
    private let interval: Duration
    private let state = Mutex(State())

    init(logger: Logger, intervalSeconds: Double) {
        self.logger = logger
        interval = .milliseconds(Int64(intervalSeconds * 1000))
    }

    func failed(_ message: @autoclosure () -> String) {
        let now = ContinuousClock.now
        let skipped: Int? = state.withLock { state in
            if let last = state.lastLine, now - last < interval {
                state.skipped += 1
                return nil
            }
            defer { state = State(lastLine: now, skipped: 0) }
            return state.skipped
        }
        guard let skipped else { return }
        let text = message()
        let more = skipped > 0 ? " (and \(skipped) more failures since the last line)" : ""
        logger.error("shared tier: \(text)\(more)")
    }
}
