import CacheModel
import Synchronization

/// Where the engine's kernel close events come from (`kernel_hits`), for an eviction pass to
/// catch up on them before it orders victims: a read whose close was queued before the pass
/// started counts in that pass's order, however busy the listener's thread is.
final class KernelCloseFeed: Sendable {
    private let source = Mutex<(events: KernelCloseEvents, deliver: @Sendable (KernelCloseEvents.Batch) -> Void)?>(nil)

    func attach(_ events: KernelCloseEvents, deliver: @escaping @Sendable (KernelCloseEvents.Batch) -> Void) {
        source.withLock { $0 = (events, deliver) }
    }

    /// The events, once attached.
    var events: KernelCloseEvents? { source.withLock { $0?.events } }

    /// Hands over every close event the kernel has queued so far.
    func catchUp() {
        guard let (events, deliver) = source.withLock({ $0 }) else { return }
        events.drainPending(deliver)
    }
}
