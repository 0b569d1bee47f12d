import Foundation
import Synchronization

/// A change the kernel must hear about.
enum PendingNotification: Sendable {
    /// A name cachefs removed.
    case deleted(parent: EntryID, child: EntryID, name: [UInt8])
    /// Attributes the kernel may hold cached, changed by cachefs (atime at an open).
    case attributes(EntryID)
}

/// Tells the kernel about removals cachefs made itself, from a thread of its own
/// (`cachefs-notify`) that holds no lock: libfuse forbids notifying from inside a request,
/// and a slow evictor round never delays them.
final class KernelNotifications: Sendable {
    private struct Queue {
        var pending: [PendingNotification] = []
        /// Notifications queued and delivered so far: a ticket is the count after its own.
        var queued: UInt64 = 0
        var delivered: UInt64 = 0
    }

    private let notifier: any KernelNotifier
    private let queue = ConditionLock(Queue())
    private let thread = BackgroundWorker(tick: 1, name: "cachefs-notify")
    /// Once the mount is gone there is no kernel to tell.
    private let stopping = Atomic<Bool>(false)

    init(notifier: any KernelNotifier) {
        self.notifier = notifier
    }

    func start() {
        thread.start { [self] in deliver() }
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        thread.stop()
        queue.broadcast()
    }

    /// Queues notifications; the ticket says when they are delivered (`waitUntilDelivered`).
    @discardableResult
    func enqueue(_ removals: [PendingNotification]) -> UInt64 {
        guard !removals.isEmpty else { return 0 }
        let ticket = queue.withLock { queue in
            queue.pending += removals
            queue.queued += UInt64(removals.count)
            return queue.queued
        }
        thread.wake()
        return ticket
    }

    /// Waits until the notifications of `ticket` reached the kernel, at most `seconds`: so a
    /// request can be answered after the kernel dropped what it made stale. Bounded, because
    /// the notifications queued before it may wait for a directory's lock, held by a process
    /// whose own request waits for a free worker thread.
    func waitUntilDelivered(_ ticket: UInt64, atMost seconds: Double) {
        queue.withLock(waitingUntil: { $0.delivered >= ticket || self.stopping.load(ordering: .acquiring) },
                       deadline: Date(timeIntervalSinceNow: seconds)) { _ in }
    }

    private func deliver() {
        let (pending, through) = queue.withLock { queue in
            defer { queue.pending = [] }
            return (queue.pending, queue.queued)
        }
        for item in pending where !stopping.load(ordering: .acquiring) {
            switch item {
            case .deleted(let parent, let child, let name): notifier.deleted(parent: parent, child: child, name: name)
            case .attributes(let id): notifier.attributesChanged(id)
            }
        }
        queue.withLock { $0.delivered = through }
        queue.broadcast()
    }
}
