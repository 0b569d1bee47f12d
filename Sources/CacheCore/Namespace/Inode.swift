import struct Foundation.Data

/// An entry in memory: its record, the newest truth about it, and who holds it.
struct Inode: Sendable {
    var record: EntryRecord
    /// Names beyond the record's own (hard links), each in a directory of the same pool.
    var links: [LinkName] = []
    /// The kernel's lookup count (FUSE `nlookup`), dropped by FORGET.
    var lookups: UInt64 = 0
    var openHandles: Int = 0
    var writers: Int = 0
    /// Set when the last name was removed while the entry is still needed (a handle is
    /// open, or the kernel still holds the inode after a user's removal): its bytes and row
    /// stay, a file's size counted in `pending_usage`, until both let go.
    var keptUntilUnreferenced = false

    var id: EntryID { record.entryID }
    /// Still needed in memory without a name: the kernel holds it or a handle is open.
    var isReferenced: Bool { lookups > 0 || openHandles > 0 }

    /// Every name of the entry: the record's own first, then its hard links.
    var names: [LinkName] {
        guard let parent = record.parent else { return [] }
        return [LinkName(parent: parent, name: record.name)] + links
    }
}

/// One name of an entry: the directory it is in and the name there.
struct LinkName: Sendable, Hashable {
    var parent: EntryID
    var name: Data
}
