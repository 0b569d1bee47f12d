import CacheModel
import CacheNames

/// Carries out what a namespace change leaves to do, after the namespace lock: the byte
/// store discards, the event log records, the notification thread tells the kernel, the
/// evictor looks at pools over a limit.
struct EngineNameEffects: NameEffectsSink {
    let bytes: ObjectFiles
    let events: EventLog
    let notifications: KernelNotifications
    let evictor: Evictor

    func discardBytes(of ids: [EntryID]) { bytes.discard(ids) }
    func record(_ events: [CacheEvent]) { self.events.record(events) }
    func enqueue(_ notifications: [PendingNotification]) { self.notifications.enqueue(notifications) }
    func requestEnforcement(of pools: [EntryID]) { evictor.requestEnforcement(of: pools) }
}
