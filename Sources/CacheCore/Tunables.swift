/// The engine's tunable numbers in one place, each with why it has its value.
public enum Tunables {
    // MARK: Eviction

    /// A write that meets ENOSPC evicts and tries again at most this often: other writers
    /// may take each freed block first, but a write must not loop forever.
    static let enospcRetries = 64
    /// Bytes written between two looks at free space: a fast writer cannot fill the disk
    /// between the evictor's once-a-second checks (4 MiB is a few milliseconds of writing).
    static let pressureCheckBytes: Int64 = 4 << 20
    /// Victims an eviction pass asks the index for at once: large enough that a pass over
    /// thousands of files costs few queries, small enough that one batch holds the namespace
    /// lock briefly.
    static let victimBatch = 256
    /// Files one hold of the namespace removes (a unit goes whole): a request waiting for
    /// the lock waits for one such hold, a few milliseconds, never for a whole pass.
    static let removalsPerHold = 256

    // MARK: The kernel

    /// How long an open that moved atime waits for the kernel to drop the cached attributes:
    /// `stat` right after a read shows the new atime, and an invalidation stuck behind a
    /// directory lock never holds an open up for longer.
    static let attributeInvalidationWaitSeconds = 0.1
    /// Removals told to the kernel between two looks at the attribute queue, so an open's
    /// invalidation never waits behind an eviction's thousands of removals.
    static let notificationChunk = 64
    /// A directory entry takes at least this many bytes of a READDIR reply, so a page of
    /// `size / minimumDirentBytes` names always fills the kernel's buffer.
    public static let minimumDirentBytes = 32

    // MARK: The index

    /// Changes one group commit takes at most: bounds a commit's time and memory.
    static let commitBatch = 4096
    /// A failed group commit (full disk, I/O error) waits this much longer at each attempt,
    /// up to `commitRetryMaxSteps` steps (1 s), then keeps trying every second: memory
    /// already shows the changes, so they must go in.
    static let commitRetryStepMicroseconds: UInt32 = 50_000
    static let commitRetryMaxSteps = 20
    /// Entry ids reserved in the index at once: one commit per 4,096 creates, and recovery
    /// looks only at the open range.
    static let idReservationChunk: EntryID = 4096
    /// Closed files the durability thread syncs and marks per round: one `syncfs` covers
    /// them all, and one query picks them.
    static let durableBatch = 4096

    // MARK: Bytes

    /// Emptied bytes of removed files kept for creates to rename into place (ext4 skips
    /// recently freed inodes when it allocates: a spare costs 30 µs, a new inode up to 450).
    public static let spareFiles = 4096
    /// A fetch adds to `fetched_bytes` and checks the file is still wanted once per this many
    /// bytes stored: often enough for a live figure, rare enough to cost nothing.
    static let fetchAccountingBytes: Int64 = 1 << 20
    /// Body bytes of an HTTP response queued before the event loop waits for the fetch to
    /// store them: bounds a fetch's memory to about two of these.
    static let responseWindowBytes = 1 << 20

    // MARK: Threads

    /// Byte removals that run at once on the ``BlockingPool``: two overlap the disk's waits
    /// (ext4 mounted with `discard` discards blocks as it frees them), so an eviction pass
    /// frees bytes as fast as it takes names; four were no faster and took CPU from reads.
    static let removalLanes = 2
    /// Fetches that run at once across all pools, on the ``BlockingPool`` (each pool also has
    /// its own `max_fetches`, default 4): a fetch's thread mostly waits for its origin, so
    /// eight pools at their default fit, and a runaway setting cannot start a thread per file.
    static let fetchLanes = 32

    /// `st_blocks` (512-byte units) of `size` bytes written whole, as ext4 allocates them in
    /// 4 KiB blocks.
    static func blocks(forSize size: Int64) -> Int64 {
        (size + 4095) / 4096 * 8
    }
}
