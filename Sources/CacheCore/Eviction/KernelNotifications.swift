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
    private let notifier: any KernelNotifier
    private let queue = Mutex<[PendingNotification]>([])
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
    }

    func enqueue(_ removals: [PendingNotification]) {
        guard !removals.isEmpty else { return }
        queue.withLock { $0 += removals }
        thread.wake()
    }

    private func deliver() {
        let pending = queue.withLock { queue in
            let taken = queue
            queue = []
            return taken
        }
        for item in pending where !stopping.load(ordering: .acquiring) {
            switch item {
            case .deleted(let parent, let child, let name): notifier.deleted(parent: parent, child: child, name: name)
            case .attributes(let id): notifier.attributesChanged(id)
            }
        }
    }
}
