/// What an index entry is: everything ext4 holds in a directory.
public enum EntryKind: Int, Sendable, Codable {
    case directory = 1
    case file = 2
    /// Its target is stored with the entry (`EntryRecord.target`); no bytes in `objects/`.
    case symlink = 3
    case fifo = 4
    case socket = 5
    case characterDevice = 6
    case blockDevice = 7

    /// Kinds that are only a name and metadata: no bytes in the store, never counted,
    /// evicted or expired (see docs/ext4-compatibility.md).
    public var isMetadataOnly: Bool { self != .directory && self != .file }
}

/// Stable identity of an entry: its row id in the index, its inode number on the mount,
/// and the name of its bytes in the store. Ids are never reused (AUTOINCREMENT).
public typealias EntryID = Int64

public enum WellKnownEntry {
    /// FUSE's root inode is 1; the index's root row has the same id.
    public static let root: EntryID = 1
}
