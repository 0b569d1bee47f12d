import Synchronization

/// Written-back WRITEs of one file run one at a time, as `write()` calls of one file do
/// without the writeback cache (the kernel holds the file's lock for each). The kernel writes
/// a file's dirty pages back with several WRITEs in flight; on a full store each would meet
/// the core's "free cached space and retry once" together, and their retries would take the
/// space the index's reserve had just given up (the index could then commit nothing, not even
/// the removals that free the disk). One at a time, the first ENOSPC stops the rest
/// (`WritebackErrors`). Files are spread over a fixed set of locks by id.
final class FileWriteLocks: Sendable {
    private final class Stripe: Sendable {
        let lock = Mutex(())
    }

    private let stripes = (0..<64).map { _ in Stripe() }

    func withLock<Result>(_ inode: UInt64, _ body: () -> Result) -> Result {
        stripes[Int(inode % UInt64(stripes.count))].lock.withLock { _ in body() }
    }
}
