/// Bounds concurrent fetches per pool (`max_fetches`): a fetch thread waits here for a slot
/// before it asks the origin for bytes.
final class FetchLimiter: Sendable {
    private let running = ConditionLock([EntryID: Int]())
    let maxPerPool: Int

    init(maxPerPool: Int) {
        self.maxPerPool = max(maxPerPool, 1)
    }

    func withSlot<T>(pool: EntryID, _ body: () throws -> T) rethrows -> T {
        running.withLock(waitingUntil: { ($0[pool] ?? 0) < maxPerPool }) { $0[pool, default: 0] += 1 }
        defer {
            running.withLock { $0[pool, default: 1] -= 1 }
            running.broadcast()
        }
        return try body()
    }
}
