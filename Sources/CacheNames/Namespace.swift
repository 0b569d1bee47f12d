import CacheModel
import Glibc
import Synchronization

/// The one owner of names and metadata. Its state is reachable only inside `withLock`,
/// which holds the lock for memory work only: the state holds nothing that can read the
/// index (loads happen outside, see ``NamespaceMiss``), commits go to the index writer (``IndexLog``),
/// and file bytes are read and written elsewhere.
///
/// Every hold hands the index changes it logged to the writer as one group, before the
/// lock is released: the writer's order is the order memory changed in, and it never
/// commits half of an operation.
final class Namespace: Sendable {
    private let state: Mutex<NamespaceState>
    private let log: any IndexLog
    /// The thread in a hold (0 when none), so a test double of the index can fail when it
    /// is read inside one.
    private let holder = Atomic<UInt>(0)

    init(log: any IndexLog) {
        state = Mutex(NamespaceState())
        self.log = log
    }

    func withLock<T>(_ body: (inout NamespaceState) throws -> T) rethrows -> T {
        try state.withLock { state in
            holder.store(UInt(pthread_self()), ordering: .relaxed)
            defer {
                log.enqueue(state.takeOutbox())
                state.endHold()
                holder.store(0, ordering: .relaxed)
            }
            return try body(&state)
        }
    }

    var isHeldByCurrentThread: Bool {
        holder.load(ordering: .relaxed) == UInt(pthread_self())
    }
}
