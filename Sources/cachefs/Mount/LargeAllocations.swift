import CLinux

/// Large allocations go straight to the kernel and back. glibc serves a request above its
/// mmap threshold with its own mapping, unmapped when freed; but once such a block is freed it
/// raises the threshold to that block's size (up to 32 MiB), so the next blocks of that size
/// come from the heap, where what is freed may stay resident. The namespace's arrays grow by
/// copying into larger ones (the inode array, slot tables, a directory's listing order), so
/// after loading 1,000,000 entries the daemon held 123 or 140 bytes an entry from one mount to
/// the next; with the threshold fixed at 4 MiB (which also stops its moving), 113 to 120
/// (docs/benchmarks.md, "Memory"). Requests below 4 MiB (request buffers, at most 1 MiB and a
/// page) still come from the heap; fixing the threshold also fixes glibc's heap-trim threshold
/// at its default, where it would otherwise follow the mmap threshold.
enum LargeAllocations {
    static let mmapThreshold: Int32 = 4 << 20

    /// False when glibc refused the setting (then its own threshold stays).
    static func configure() -> Bool {
        mallopt(M_MMAP_THRESHOLD, mmapThreshold) == 1
    }
}
