/// The engine's tunable numbers in one place, each with why it has its value.
enum Tunables {
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
}
