import CacheModel
import DequeModule
import Foundation
import Synchronization

/// Tells the kernel about changes cachefs made itself, from a thread of its own
/// (`cachefs-notify`) that holds no lock: libfuse forbids notifying from inside a request,
/// and a slow evictor round never delays them.
///
/// Two queues: removals, delivered in chunks, and attribute invalidations (an open moved
/// atime), which an open waits for and so go first: between two chunks of an eviction's
/// thousands of removals, not after all of them.
final class KernelNotifications: Sendable {
    private struct Queue {
        /// Taken from the front a chunk at a time, so a `Deque`: no copy of the rest per chunk.
        var removals: Deque<PendingNotification> = []
        var attributes: [EntryID] = []
        /// Attribute invalidations queued and delivered so far: a ticket is the count after its own.
        var attributesQueued: UInt64 = 0
        var attributesDelivered: UInt64 = 0
    }

    /// Removals delivered between two looks at the attribute queue.
    static let chunk = Tunables.notificationChunk

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

    func enqueue(_ removals: [PendingNotification]) {
        guard !removals.isEmpty else { return }
        queue.withLock { $0.removals.append(contentsOf: removals) }
        thread.wake()
    }

    /// Has the kernel drop its cached attributes of `id`, and waits until it did, at most
    /// `seconds`: so a request can be answered after the kernel dropped what it made stale.
    /// Bounded, because a removal being delivered may wait for a directory's lock, held by a
    /// process whose own request waits for a free worker thread.
    func invalidateAttributes(of id: EntryID, waitingAtMost seconds: Double) {
        let ticket = queue.withLock { queue in
            queue.attributes.append(id)
            queue.attributesQueued += 1
            return queue.attributesQueued
        }
        thread.wake()
        queue.withLock(waitingUntil: { $0.attributesDelivered >= ticket || self.stopping.load(ordering: .acquiring) },
                       deadline: Date(timeIntervalSinceNow: seconds)) { _ in }
    }

    private func deliver() {
        while !stopping.load(ordering: .acquiring) {
            let (attributes, through, removals) = queue.withLock { queue in
                defer {
                    queue.attributes = []
                    queue.removals.removeFirst(min(Self.chunk, queue.removals.count))
                }
                return (queue.attributes, queue.attributesQueued, Array(queue.removals.prefix(Self.chunk)))
            }
            if attributes.isEmpty && removals.isEmpty { return }
            if !attributes.isEmpty {
                for id in attributes { notifier.attributesChanged(id) }
                queue.withLock { $0.attributesDelivered = through }
                queue.broadcast()
            }
            for removal in removals where !stopping.load(ordering: .acquiring) {
                switch removal {
                case .deleted(let parent, let child, let name): notifier.deleted(parent: parent, child: child, name: name)
                case .lookUpAgain(let parent, let name): notifier.entryChanged(parent: parent, name: name)
                }
            }
        }
    }
}
