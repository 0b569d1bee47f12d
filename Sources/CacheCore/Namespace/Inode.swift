/// An entry in memory: its record, the newest truth about it, and who holds it.
struct Inode: Sendable {
    var record: EntryRecord
    /// The kernel's lookup count (FUSE `nlookup`), dropped by FORGET.
    var lookups: UInt64 = 0
    var openHandles: Int = 0
    var writers: Int = 0
    /// Set when the name was removed while open: its size is in `pending_usage` until the
    /// last handle closes.
    var countedAsPending = false

    var id: EntryID { record.entryID }
    /// Still needed in memory without a name: the kernel holds it or a handle is open.
    var isReferenced: Bool { lookups > 0 || openHandles > 0 }
}
