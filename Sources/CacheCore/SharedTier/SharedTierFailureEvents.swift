import CacheModel
import CacheNames
import Foundation

/// The tier's failures as `shared_tier_failed` events in `STORE/events.jsonl`, written when
/// ``SharedTierFailureLog`` writes its line (at most one per interval, with the number of
/// failures left out since the last one), so a dead tier does not flood the event log.
struct SharedTierFailureEvents: Sendable {
    let events: EventLog
    let names: Names

    /// An event naming `pool` (the pool of the failure that made it) and `reason`.
    func record(pool: EntryID, reason: String) {
        let name: String
        do {
            name = String(decoding: try names.record(pool).name, as: UTF8.self)
        } catch {
            name = ""   // The pool was removed meanwhile: the event still tells of the failure.
        }
        events.record([CacheEvent(time: names.now, event: .sharedTierFailed, pool: name, path: name, size: 0,
                                  reason: reason)])
    }
}
