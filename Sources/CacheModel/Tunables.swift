/// Every tunable number of cachefs in one place, each with why it has its value. Mount
/// options (`EngineConfiguration`, the CLI's `MountSettings`) and pool settings take their
/// defaults from here; a number that is a format, a protocol or a kernel limit is not a
/// tunable and stays where it is defined.
public enum Tunables {
    // MARK: Periodic work (mount options override these)

    /// Access times gathered in memory reach the index's access log this often: a read never
    /// writes to disk, and a crash loses at most this much recency (`docs/eviction.md`).
    public static let accessFlushSeconds = 2.0
    /// Read times are folded into the entries' rows (one UPDATE per file read since the last
    /// fold) before a pass chooses victims or expiries, at unmount, and once this many files
    /// were read since the last fold: until then they stay in memory and in the access log,
    /// about 80 bytes each, so a hot set this size is read over and over for no UPDATE at all.
    public static let accessFoldFiles = 32_768
    /// The full age sweep (`-o sweep_interval`): a backstop only, since a lookup of an expired
    /// file removes it and the evictor wakes within a second of the next expiry.
    public static let sweepSeconds = 60.0
    /// Free space on the store's filesystem is checked against `min_free` this often; a fast
    /// writer is also checked every `pressureCheckBytes`.
    public static let pressureCheckSeconds = 1.0
    /// Closed files are synced in one `syncfs` and marked durable this often
    /// (`-o sync_interval`): a power loss drops at most this much of the newest cached files.
    public static let durabilitySeconds = 2.0
    /// How long the index writer lets changes gather before one group commit
    /// (`-o commit_interval`): a crash loses at most this window, and one commit serves
    /// every change of a burst.
    public static let commitWindowSeconds = 0.005
    /// The daemon's metrics file is rewritten this often (`-o metrics_interval`): the scrape
    /// interval of Prometheus's sample configuration, so each scrape sees fresh figures.
    public static let metricsSeconds = 15.0
    /// While the index file is removed, the open copy is written back at most this often
    /// (and at every durable flush): a full copy costs milliseconds per megabyte of index.
    package static let indexWriteBackSeconds = 10.0

    // MARK: Settings' defaults

    /// `min_free` (percent of the store's filesystem): room for the system and other writers.
    public static let minFreePercent: Int64 = 5
    /// `low_watermark`: a pass over the limit evicts down to this percent of it, so the next
    /// few writes do not start a pass each.
    public static let lowWatermarkPercent: Int64 = 90
    /// `negative_ttl`: a name the origin lacks is not asked again for this long.
    public static let negativeTTLSeconds: Int64 = 30
    /// Fetched files whose last validation (fetch, or the origin's "unchanged") is kept in
    /// memory; when more are, all are forgotten at once, and each asks its origin at its
    /// next open (each holds a time and the file's ETag and Last-Modified).
    public static let validationsKept = 1_000_000
    /// `admit_window`: misses of a file further apart than this do not add up to `admit_after`.
    public static let admitWindowSeconds: Int64 = 3600

    // MARK: The shared tier (docs/shared-tier.md)

    /// `shared_max_file_size`: thumbnails and avatars go to Redis; a 2 GiB file does not
    /// (Redis holds values in memory, and one value is at most 512 MiB).
    public static let sharedMaxFileSize: Int64 = 1 << 20
    /// The largest `shared_max_file_size`: Redis's own limit of one value (`proto-max-bulk-len`).
    public static let sharedMaxFileSizeLimit: Int64 = 512 << 20
    /// A LOOKUP waits this long for the tier's GET, then answers as a miss: a lookup that
    /// missed locally and in the tier costs at most this much more than without the tier.
    public static let sharedLookupMilliseconds: Int64 = 200
    /// A write-behind SET: off every request's path, so it may wait longer.
    public static let sharedWriteMilliseconds: Int64 = 2000
    /// Files waiting to be written to the tier; past it the newest are dropped (and counted):
    /// a burst of writes never holds memory without bound.
    public static let sharedQueueLimit = 1024
    /// The tier's failures are logged at most once per this long (they are all counted).
    public static let sharedLogIntervalSeconds: Double = 10
    /// Names whose misses are counted for `admit_after`; when more are, all are forgotten
    /// (their next miss counts from one again).
    public static let admissionNamesKept = 100_000
    /// `max_fetches`: fetches from one pool's origin at once, so one pool cannot take every
    /// fetch lane.
    public static let maxFetches: Int64 = 4
    /// Blocks fetched ahead of a sequential reader of a file held in blocks (within
    /// `max_fetches`): with 4 MiB blocks, 12 MiB in flight keep a loopback origin's stream
    /// busy while the reader takes the block before them.
    package static let readAheadBlocks = 3
    /// Block buffers (``BlockBuffer``) kept idle for the next block fetched: one per block in
    /// flight at the default `max_fetches`, so a sequential reader's blocks fault in no new
    /// pages. Each holds a block's size of resident memory.
    package static let idleBlockBuffers = 4
    /// `user.cache.preview` without parameters lists this many victims.
    package static let previewVictims = 100
    /// A value of `user.cache.preview` or `user.cache.events` holds at most this many bytes,
    /// below the kernel's 64 KiB limit on an attribute's value; the rest comes in later pages.
    package static let attributePageBytes = 60_000
    /// `max_size` of a new pool, and of the default `data` pool.
    public static let poolMaxSizeBytes: Int64 = 25 << 20
    /// Names of one file at most (ext4's limit; link(2) answers EMLINK past it).
    package static let maxLinks: UInt32 = 65_000

    // MARK: Eviction

    /// A write that meets ENOSPC evicts and tries again at most this often: other writers
    /// may take each freed block first, but a write must not loop forever.
    package static let enospcRetries = 64
    /// How long a write that met ENOSPC, with nothing left to evict, waits for the bytes of
    /// files removed just before (kept until the kernel's FORGET, which follows `rm` by
    /// milliseconds) to go, polling every `removedBytesPollMicroseconds`.
    package static let removedBytesWaitSeconds = 1.0
    package static let removedBytesPollMicroseconds: UInt32 = 10_000
    /// Bytes written between two looks at free space: a fast writer cannot fill the disk
    /// between the evictor's once-a-second checks (4 MiB is a few milliseconds of writing).
    package static let pressureCheckBytes: Int64 = 4 << 20
    /// Victims an eviction pass asks the index for at once: large enough that a pass over
    /// thousands of files costs few queries, small enough that one batch holds the namespace
    /// lock briefly.
    package static let victimBatch = 256
    /// Files one hold of the namespace removes (a unit goes whole): a request waiting for
    /// the lock waits for one such hold, about a millisecond, never for a whole pass.
    package static let removalsPerHold = 64
    /// How many of a policy's candidates not in memory a hold sets aside before their
    /// directories load outside the lock (more may come in the policy's last step: it skips
    /// past every candidate it cannot take).
    package static let victimsSetAsidePerHold = 64
    /// Candidates a policy may pass over (pinned, or not loaded yet) in one hold before the
    /// hold ends and the search goes on in the next: a millisecond or so of the namespace lock.
    package static let policyStepsPerHold = 1_024
    /// Candidates read from the index at once when looking for a pool's oldest access
    /// (`oldest_access`): the walk stops at the first one not read since the last access
    /// flush, which is usually among the first few.
    package static let oldestAccessBatch = 64
    /// `user.cache.hit_ratio` weighs requests by how recent they are, halving every this many:
    /// about the requests a pool of a few thousand files sees while its contents turn over,
    /// so the figure follows a change of workload within a few thousand requests.
    package static let hitRatioHalfLife = 4_096.0

    // MARK: Memory bounds

    /// Bytes of a pool's trace gathered between two of the evictor's rounds (about a second)
    /// before lines are dropped and counted: a bound on memory whatever the request rate.
    package static let traceBufferBytes = 1 << 20
    /// Changes kept while a pool's in-memory policy waits to be built: a bound on memory
    /// while the build reads the index.
    package static let pendingPolicyChanges = 1 << 20
    /// Names an origin lacks remembered at once; past it, expired ones go (all, if none has
    /// expired): a bound on memory whatever names an app asks for.
    package static let negativeCacheNames = 65_536
    /// Warnings `status` keeps: a store in trouble keeps its first reports, not an endless list.
    package static let warningsKept = 16
    /// A directory load of at least this many entries asks the allocator to return freed
    /// pages (`malloc_trim`): growing the tables to a big directory freed their smaller
    /// copies, and a trim after a small load costs more than it returns. So does the memory
    /// check after listings of that many names in all (``Names/returnMemoryFreedByListings()``).
    package static let trimAfterLoadingEntries = 16_384
    /// How many names of a directory read from the index one hold of the namespace lock
    /// installs: about a millisecond of work, so a request never waits long behind the load of a
    /// directory of 100,000 files (docs/benchmarks.md, the eviction-latency rows).
    package static let installNamesPerHold = 1_024
    /// How many rows of a directory a load reads from the index at a time, outside the
    /// namespace hold: the load of a directory of a million files holds one page of rows
    /// besides what memory keeps, not all of them.
    package static let loadRowsPerRead = 16_384
    /// The `memory_budget` mount option's default: the names the daemon keeps loaded, at
    /// ``bytesPerLoadedEntry`` each and what each holds beyond (about 1,400,000 entries with
    /// short names). Past it, directories idle for ``memoryIdleSeconds`` leave memory until
    /// they are used again. A directory of a million
    /// files is then read from the index again (about a second) after an idle time, not kept
    /// at 130 MB for the life of the mount.
    public static let memoryBudgetBytes: Int64 = 128 << 20
    /// What one loaded entry costs in the daemon's memory, as measured by `ls -f` of a
    /// 1,000,000-file directory with short names (docs/benchmarks.md, "Memory"): the packed
    /// inode (80 B), its 4-byte slots in the id table and in the directory's table of own
    /// names, at loads of 1/2 to 3/4, and its id in the listing order (4 B). A longer name or
    /// extras add their own bytes (``Inode/heapBytes``).
    public static let bytesPerLoadedEntry: Int64 = 96
    /// The `memory_idle` mount option's default: how long a directory must go without a
    /// lookup or listing of its names (and be held by nothing) before it may leave memory.
    /// Long enough that a directory in use between two bursts stays.
    public static let memoryIdleSeconds = 60.0
    /// The unloader checks the budget this often at most (and twice per idle time when that
    /// is shorter); a check under the budget is one short hold.
    public static let memoryCheckSeconds = 10.0
    /// How many children of a directory one hold of an unload checks or forgets, as an
    /// install's holds do (``installNamesPerHold``).
    package static let unloadNamesPerHold = 1_024
    /// Read times one hold of a fold moves into the inodes (``Names/flushAccessTimes()``): a
    /// fold past ``accessFoldFiles`` would otherwise hold the namespace for milliseconds.
    package static let foldTimesPerHold = 1_024
    /// Inode positions one hold of a settings change's scan looks at (the kernel's names of
    /// a pool's files dropped, ``Names/kernelLooksUpAgain(inPool:)``): a check of a counter
    /// each, so about as long a hold as an install's.
    package static let inodesScannedPerHold = 16_384
    /// The inode table is packed (its array copied without freed positions, so their memory
    /// goes back) once unloads have freed at least this many positions and more than it holds.
    package static let compactAfterVacantInodes = 16_384
    /// How many loads one operation may wait for before it gives up: each load settles a
    /// directory or an entry for good, so only a walk of that many unloaded ones meets it.
    package static let loadsPerOperation = 1_000

    // MARK: The kernel

    /// How long the kernel may trust a name and attributes it was told (`-o entry_timeout`,
    /// `attr_timeout`): the daemon tells the kernel of every removal it makes and changes no
    /// attribute behind its back, so this only bounds how long a lost notification could
    /// leave a stale name; an expired entry costs a round trip per name.
    public static let kernelCacheSeconds = 3600.0
    /// How long the kernel may keep the name of a file past its expiry that stays (open, being
    /// written, pinned since): it asks again after this, not at every `stat`.
    package static let expiredEntrySeconds = 1.0
    /// FUSE's largest WRITE request: the most the kernel sends by default (256 pages), so a
    /// large write costs the fewest requests.
    public static let maxWriteBytes: UInt32 = 1 << 20
    /// Threads of the FUSE loop (`-o threads`): a request that waits (an origin lookup, an
    /// fsync) does not hold up the others, and creates ran 1.4 times as fast as with one
    /// thread (docs/benchmarks.md).
    public static let fuseThreads: UInt32 = 8
    /// How long an open that moved atime waits for the kernel to drop the cached attributes:
    /// `stat` right after a read shows the new atime, and an invalidation stuck behind a
    /// directory lock never holds an open up for longer.
    package static let attributeInvalidationWaitSeconds = 0.1
    /// How long the listener of the kernel's open and close events (`kernel_hits`) lets them
    /// gather after it wakes: one read then takes many hits' events, not one wakeup each.
    /// Nothing waits on it (a request or an eviction pass that needs the events reads the
    /// queue itself), and the kernel queues 16,384 events by default: two a hit, at 190,000
    /// hits a second (this machine's floor of a FUSE hit) 1,900 gather in 5 ms: a ninth of
    /// the queue, read in one wakeup where 1 ms took five.
    public static let kernelEventGatherMicroseconds: UInt32 = 5_000
    /// The buffer one read of those events fills (they are 16 bytes and a name each).
    public static let kernelEventBufferBytes = 64 * 1024
    /// Removals told to the kernel between two looks at the attribute queue, so an open's
    /// invalidation never waits behind an eviction's thousands of removals.
    package static let notificationChunk = 64
    /// A directory entry takes at least this many bytes of a READDIR reply, so a page of
    /// `size / minimumDirentBytes` names always fills the kernel's buffer.
    public static let minimumDirentBytes = 32
    /// A READDIRPLUS entry takes at least this many bytes (in fact 160 or more: attributes
    /// and timeouts besides the name), so a page of `size / minimumDirentPlusBytes` names is
    /// never fewer than fit; the engine stops at the ones that fit.
    public static let minimumDirentPlusBytes = 96

    // MARK: The index

    /// Changes one group commit takes at most: bounds a commit's time and memory.
    package static let commitBatch = 4096
    /// A failed group commit (full disk, I/O error) waits this much longer at each attempt,
    /// up to `commitRetryMaxSteps` steps (1 s), then keeps trying every second: memory
    /// already shows the changes, so they must go in.
    package static let commitRetryStepMicroseconds: UInt32 = 50_000
    package static let commitRetryMaxSteps = 20
    /// Entry ids reserved in the index at once: one commit per 4,096 creates, and recovery
    /// looks only at the open range.
    package static let idReservationChunk: EntryID = 4096
    /// Closed files the durability thread syncs and marks per round: one `syncfs` covers
    /// them all, and one query picks them.
    package static let durableBatch = 4096
    /// How long a connection waits for a lock SQLite holds for another (a commit, a
    /// checkpoint) before it fails: those take milliseconds, so only a stuck store waits this
    /// long.
    package static let indexBusySeconds = 5.0
    /// Rows below this many are opened on the calling thread: handing out slices to every
    /// core costs more than opening them.
    package static let rowsWorthSlicing = 256

    // MARK: Files on the store

    /// Headroom kept past the end of the index's log while mounted, so the commits of the
    /// removals that free a full disk always go through.
    package static let logHeadroomBytes: Int64 = 8 << 20
    /// `STORE/reserve` while unmounted: the same headroom, so a mount on a full disk can
    /// commit its recovery and settings.
    package static let reserveBytes: Int64 = 8 << 20
    /// `events.jsonl` is rotated at this size (one old file kept).
    public static let eventLogBytes: Int64 = 4 << 20
    /// The background daemon's `daemon.log` is rotated at this size (one old file kept).
    public static let daemonLogBytes: Int64 = 4 << 20
    /// A pool's trace file is rotated at this size (one old file kept): about two million
    /// accesses, enough to size a pool, bounded on disk to two files.
    package static let traceFileBytes: Int64 = 48 << 20

    // MARK: Bytes

    /// Emptied bytes of removed files kept for creates to rename into place (ext4 skips
    /// recently freed inodes when it allocates: a spare costs 30 µs, a new inode up to 450).
    public static let spareFiles = 4096
    /// How many read-only descriptors of stored bytes may stay open unused between hits
    /// (`KeptDescriptors`): warm hits cost 20-23 µs of daemon CPU each over 4,000 files, all
    /// kept, against 26-30 µs over 10,000 files when only 5,000 could be kept (each open then
    /// opened and closed its bytes).
    /// Each pins a `struct file` and its inode in the kernel while it is kept.
    package static let keptDescriptors = 16_384
    /// Descriptors of the open-file limit never taken by kept ones (open handles, fetches,
    /// the index); an open that still meets the limit closes the unused kept ones first.
    package static let descriptorsLeftUnkept = 4_096
    /// A fetch adds to `fetched_bytes` and checks the file is still wanted once per this many
    /// bytes stored: often enough for a live figure, rare enough to cost nothing.
    package static let fetchAccountingBytes: Int64 = 1 << 20
    /// Body bytes of an HTTP response queued before the event loop waits for the fetch to
    /// store them: bounds a fetch's memory to about two of these.
    package static let responseWindowBytes = 1 << 20

    // MARK: Origins

    /// Tries of a failing fetch before readers get EIO.
    package static let fetchAttempts = 3
    /// The wait before a failed fetch's first retry; it doubles before each further one.
    package static let firstFetchRetrySeconds = 0.5
    /// An HTTP origin that accepts no connection within this long fails the request (a
    /// refused one fails at once): a lookup holds a FUSE thread meanwhile.
    package static let httpConnectSeconds: Int64 = 10
    /// An HTTP response that sends no bytes for this long fails the request (a fetch is then
    /// retried): long enough for a slow origin's first byte.
    package static let httpReadSeconds: Int64 = 30
    /// Redirects an HTTP request follows: enough for a CDN's hops, and a loop ends.
    package static let httpMaxRedirects = 5
    /// The start of an error response's body kept for the log (an S3 error document fits).
    package static let httpErrorBodyBytes = 64 << 10
    /// Connections to one host: fetches of several pools (`max_fetches` each) and lookups
    /// share them.
    package static let httpConnectionsPerHost = 64
    /// An HTTP file this small is fetched with its lookup: thumbnails and avatars fit, and one
    /// FUSE read of 128 KiB serves them whole.
    package static let bytesWithLookup = 128 << 10
    /// A `file://` origin is read in chunks of this many bytes: readers of a large file are
    /// served as it arrives, and each chunk is one read of the origin.
    package static let fileOriginChunkBytes = 256 << 10
    /// An `exec:` origin's output is read in chunks of this many bytes: a pipe's default
    /// capacity on Linux.
    package static let execOriginChunkBytes = 64 << 10

    // MARK: Encryption

    /// Nonces drawn from the kernel with one `getrandom`, for up to this many blocks: a
    /// syscall per 4 KiB block was a seventh of an encrypted write's CPU.
    package static let nonceBatchBlocks = 256
    /// Sealed blocks are written in runs of about this many bytes: few enough to stay in the
    /// CPU's cache from the seal to the write (1 MiB runs took about a tenth more CPU here).
    package static let sealedRunBytes = 1 << 18
    /// Zeros written through an encrypted file (a punched or zeroed range) in chunks of this
    /// many bytes, so a large range needs no buffer of its size.
    package static let zeroChunkBytes = 1 << 20

    // MARK: Threads

    /// Byte removals that run at once on the ``BlockingPool``: two overlap the disk's waits
    /// (ext4 mounted with `discard` discards blocks as it frees them), so an eviction pass
    /// frees bytes as fast as it takes names; four were no faster and took CPU from reads.
    package static let removalLanes = 2
    /// Fetches that run at once across all pools, on the ``BlockingPool`` (each pool also has
    /// its own `max_fetches`, default 4): a fetch's thread mostly waits for its origin, so
    /// eight pools at their default fit, and a runaway setting cannot start a thread per file.
    package static let fetchLanes = 32

    // MARK: Daemons and the command line

    /// How long a new mount waits for a daemon that is flushing after its unmount: longer
    /// than a flush takes, so only a stuck daemon makes the mount fail, and then not forever.
    public static let handOverSeconds = 30.0
    /// How often a new mount looks whether the old daemon let go of the store: a mount right
    /// after an unmount starts within this of the old daemon's exit.
    public static let handOverPollMicroseconds: UInt32 = 50_000
    /// `cachefs events --follow` looks for new events this often: live to a reader, and an
    /// idle follower costs nothing.
    public static let eventsFollowMicroseconds: UInt32 = 200_000
    /// `cachefs purge` and `clear` redraw their progress line this often: each redraw reads
    /// `user.cache.files`, a figure the daemon sums from memory.
    public static let progressSeconds = 0.2

    /// `st_blocks` (512-byte units) of `size` bytes written whole, as ext4 allocates them in
    /// 4 KiB blocks.
    package static func blocks(forSize size: Int64) -> Int64 {
        (size + 4095) / 4096 * 8
    }
}
