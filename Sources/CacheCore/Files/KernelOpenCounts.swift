import CacheModel
import Synchronization

/// How many descriptors the kernel has open on each file (`kernel_hits`), from its open and
/// close events: a truncation that comes without a handle is an `open(O_TRUNC)`'s (or an
/// `ftruncate`'s) when the file is open, and then starts a write (``Files/setattr``).
///
/// Close to exact, not exact: the kernel merges an event identical to the last one still
/// queued, so two opens of one file in a row count as one (and their two closes too, when
/// they also follow each other). A count that stays above zero is dropped when the kernel
/// forgets the inode (an open descriptor holds it) or when the queue overflowed.
final class KernelOpenCounts: Sendable {
    private let counts = Mutex<[EntryID: Int]>([:])

    /// Applies one batch of events; returns the files it left with no open descriptor. The
    /// batch's opens and closes are netted first, so an open and its close read together
    /// leave nothing behind, in whatever order they are listed.
    func apply(opened: [EntryID], closed: [EntryID]) -> [EntryID] {
        var change: [EntryID: Int] = [:]
        for id in opened { change[id, default: 0] += 1 }
        for id in closed { change[id, default: 0] -= 1 }
        return counts.withLock { counts in
            var closedAll: [EntryID] = []
            for (id, delta) in change {
                let count = (counts[id] ?? 0) + delta
                if count > 0 {
                    counts[id] = count
                } else {
                    counts[id] = nil
                    if delta < 0 { closedAll.append(id) }
                }
            }
            return closedAll
        }
    }

    func isOpen(_ id: EntryID) -> Bool { counts.withLock { $0[id] != nil } }

    /// The kernel forgot `id`: no descriptor of it is open.
    func forget(_ id: EntryID) { counts.withLock { _ = $0.removeValue(forKey: id) } }

    /// Events were lost: every count is unknown.
    func removeAll() { counts.withLock { $0.removeAll() } }

    var isEmpty: Bool { counts.withLock { $0.isEmpty } }
}
