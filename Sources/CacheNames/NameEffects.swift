import CacheModel
/// What a namespace change leaves to be done once the namespace lock is released: decided
/// under the lock, carried out after it by ``Names/change(_:)``, so no request holds the
/// namespace while it unlinks bytes, appends events, queues kernel notifications or wakes
/// the evictor.
struct NameEffects {
    /// Entries whose last name and last reference are gone: their bytes and rows go after
    /// the commit that leaves the rows nameless (``NameEffectsSink/discardBytes(of:)``).
    var bytesToDiscard: [EntryID] = []
    var events: [CacheEvent] = []
    /// Names cachefs removed by itself; a user's own removals the kernel made itself.
    var notifications: [PendingNotification] = []
    /// Pools over a limit after the change, for the evictor.
    var poolsToEnforce: Set<EntryID> = []
    /// Errors met in the hold, logged after it: a log line is a write(2), never made under
    /// the namespace lock.
    var errors: [String] = []
}
