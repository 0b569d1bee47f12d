import CacheModel
import Synchronization

/// Where the engine's kernel close events come from (`kernel_hits`), for an eviction pass or a
/// figure read to catch up on them first: a read whose close was queued before counts, however
/// busy the listener's thread is.
final class KernelCloseFeed: Sendable {
    private struct Source {
        let events: KernelCloseEvents
        /// Weakly: the feed belongs to the eviction host, which `files` holds.
        weak var files: Files?
    }

    private let source = Mutex<Source?>(nil)

    func attach(_ events: KernelCloseEvents, to files: Files) {
        source.withLock { $0 = Source(events: events, files: files) }
    }

    /// The events, once attached.
    var events: KernelCloseEvents? { source.withLock { $0?.events } }

    /// Hands over every close event the kernel has queued so far.
    func catchUp() {
        guard let (events, files) = source.withLock({ source in source.map { ($0.events, $0.files) } }),
              let files else { return }
        events.drainPending { files.kernelClosed($0) }
    }
}
