/// What an index entry is. Only directories and regular files exist in a store.
public enum EntryKind: Int, Sendable, Codable {
    case directory = 1
    case file = 2
}

/// Stable identity of an entry: its row id in the index, its inode number on the mount,
/// and the name of its bytes in the store. Ids are never reused (AUTOINCREMENT).
public typealias EntryID = Int64

public enum WellKnownEntry {
    /// FUSE's root inode is 1; the index's root row has the same id.
    public static let root: EntryID = 1
}
