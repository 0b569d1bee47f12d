import CacheModel
import Foundation
import Logging
import Synchronization

/// The tier's failures in the daemon's log, at most one line per interval (a tier that is
/// down fails every lookup): the first of each interval is written with the number left out
/// since the last line, and recorded as an event (``SharedTierFailureEvents``) when there is
/// an event log. Every failure is counted in `shared_errors` regardless.
final class SharedTierFailureLog: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var skipped = 0
    }

    private let logger: Logger
    private let interval: Duration
    private let events: SharedTierFailureEvents?
    private let state = Mutex(State())

    init(logger: Logger, intervalSeconds: Double, events: SharedTierFailureEvents? = nil) {
        self.logger = logger
        self.events = events
        interval = .milliseconds(Int64(intervalSeconds * 1000))
    }

    /// A failure of `pool`'s tier.
    func failed(pool: EntryID, _ message: @autoclosure () -> String) {
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
        events?.record(pool: pool, reason: text + (skipped > 0 ? " (and \(skipped) more failures since the last event)" : ""))
    }
}
