/// Bounds concurrent fetches per pool (`max_fetches`): a fetch thread waits here for a slot
/// before it asks the origin for bytes.
final class FetchLimiter: Sendable {
    private let running = ConditionLock([EntryID: Int]())

    /// `limit` is read each time the slot is looked at, so a changed `max_fetches` applies to
    /// fetches already waiting.
    func withSlot<T>(pool: EntryID, limit: () -> Int, _ body: () throws -> T) rethrows -> T {
        running.withLock(waitingUntil: { ($0[pool] ?? 0) < max(limit(), 1) }) { $0[pool, default: 0] += 1 }
        defer {
            running.withLock { $0[pool, default: 1] -= 1 }
            running.broadcast()
        }
        return try body()
    }

    /// A pool's limit went up: fetches waiting for a slot look again.
    func limitsChanged() {
        running.broadcast()
    }
}
