import CacheCore
import Foundation
import Logging

/// The thread that tells the engine of the kernel's close events on the mount (`kernel_hits`):
/// it marks the mount, lets the mount be announced ready, then hands each batch over.
final class KernelHitsListener: Sendable {
    private let events: KernelCloseEvents
    private let finished = DispatchSemaphore(value: 0)

    /// The close events of this daemon, or nil (with a warning: the kernel then sends OPEN as
    /// before) when fanotify is refused, as it is without CAP_SYS_ADMIN.
    static func make(logger: Logger) -> KernelCloseEvents? {
        do {
            return try KernelCloseEvents()
        } catch {
            logger.warning("kernel_hits needs fanotify, which needs root (CAP_SYS_ADMIN): \(error); every open goes through the daemon")
            return nil
        }
    }

    init(events: KernelCloseEvents, engine: CacheEngine, mountpoint: String, logger: Logger,
         thenAnnounce announceReady: @escaping @Sendable () -> Void) {
        self.events = events
        let thread = Thread { [events, finished] in
            do {
                try events.watch(mountpoint: mountpoint)
            } catch {
                logger.error("kernel_hits: could not watch \(mountpoint) for close events: \(error); hits are not counted")
            }
            engine.listen(to: events)
            announceReady()
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
