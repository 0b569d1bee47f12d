import CacheCore
import Foundation
import Logging

/// The thread that tells the engine of the kernel's close events on the mount (`kernel_hits`),
/// batch by batch.
final class KernelHitsListener: Sendable {
    private let events: KernelCloseEvents
    private let finished = DispatchSemaphore(value: 0)

    /// The close events of this mount, or nil (with a warning: every open then goes through
    /// the daemon) when the kernel refuses an inotify instance.
    static func make(mountpoint: String, logger: Logger) -> KernelCloseEvents? {
        do {
            return try KernelCloseEvents(mountpoint: mountpoint)
        } catch {
            let reason = String(cString: strerror(error.errno))
            logger.warning("kernel_hits: the kernel refused an inotify instance (\(reason); the limit is fs.inotify.max_user_instances); every open goes through the daemon, as with kernel_hits=off")
            return nil
        }
    }

    /// Attaches `events` to `engine` (before any request: each directory is watched before
    /// the daemon answers the first request inside it) and starts the thread.
    init(events: KernelCloseEvents, engine: CacheEngine) {
        self.events = events
        engine.listen(to: events)
        let thread = Thread { [events, finished] in
            events.run { batch in engine.kernelClosed(batch) }
            finished.signal()
        }
        thread.name = "cachefs-closes"
        thread.start()
    }

    /// Ends the thread (the loop has ended) and waits for it.
    func stop() {
        events.stop()
        finished.wait()
    }
}
