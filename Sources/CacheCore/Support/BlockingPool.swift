import CacheModel
import NIOPosix

/// The daemon's one bounded pool of threads for blocking work that is not a FUSE request:
/// origin fetches and byte removals. Each kind is admitted within lanes of its own before it
/// is submitted (``FetchLimiter``, ``ByteRemover``) and the pool has a thread for every lane,
/// so a job never waits in the pool's queue behind another kind. That matters: a fetch can
/// wait for the evictor, which waits for removals, so removals must never wait for threads
/// that fetches hold.
final class BlockingPool: Sendable {
    static let threadCount = Tunables.fetchLanes + Tunables.removalLanes
    private let threads = NIOThreadPool(numberOfThreads: threadCount)

    init() {
        threads.start()
    }

    /// An engine whose opening failed half way never calls `shutdown`.
    deinit {
        shutdown()
    }

    /// Runs `job` on a thread of the pool; after `shutdown`, on the caller's thread (NIO calls
    /// a job submitted to a stopped pool at once, as cancelled, and we run it all the same).
    func run(_ job: @escaping @Sendable () -> Void) {
        threads.submit { _ in job() }
    }

    /// Ends the threads once the jobs submitted so far are done.
    func shutdown() {
        // It throws only for NIO's shared singleton pool, which cannot be stopped; this pool
        // is our own, and a second shutdown (from deinit) finds it stopped and returns.
        try? threads.syncShutdownGracefully()
    }
}
