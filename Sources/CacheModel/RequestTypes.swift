/// What a SETATTR asks to change; nil fields stay as they are.
public struct AttributeChanges: Sendable {
    public enum TimeChange: Sendable {
        case now
        case at(Timestamp)
    }

    public var permissions: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: Int64?
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?

    public init(permissions: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: Int64? = nil,
                accessTime: TimeChange? = nil, modificationTime: TimeChange? = nil) {
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
    }
}

/// One name in a directory listing, with the cursor that resumes after it.
public struct DirectoryItem: Sendable {
    public var name: [UInt8]
    public var id: EntryID
    public var kind: EntryKind
    public var nextOffset: Int64
    /// The full attributes, for READDIRPLUS (nil for "." and "..").
    public var attributes: FileAttributes?
    /// The record behind `attributes`, which READDIRPLUS counts as a kernel lookup.
    package var listedRecord: EntryRecord?

    package init(name: [UInt8], id: EntryID, kind: EntryKind, nextOffset: Int64, attributes: FileAttributes? = nil,
                 listedRecord: EntryRecord? = nil) {
        self.name = name
        self.id = id
        self.kind = kind
        self.nextOffset = nextOffset
        self.attributes = attributes
        self.listedRecord = listedRecord
    }
}

/// How RENAME may treat an existing target (renameat2 flags).
public struct RenameFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let noReplace = RenameFlags(rawValue: 1)
    public static let exchange = RenameFlags(rawValue: 2)
}

/// The answer to CREATE: the new entry's attributes and its open handle.
public struct CreatedFile: Sendable {
    public var attributes: FileAttributes
    public var handle: UInt64
    /// Whether the create's open writes past the kernel's page cache (`direct_io`), chosen
    /// with its handle (kept when the kernel is handed handle 0, with `kernel_hits`).
    public var bypassesPageCache = false

    package init(attributes: FileAttributes, handle: UInt64) {
        self.attributes = attributes
        self.handle = handle
    }
}

/// Free space of the store's own filesystem, as `df` shows it.
public struct FilesystemStats: Sendable {
    public var blockSize: UInt64
    public var fragmentSize: UInt64
    public var blocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var files: UInt64
    public var freeFiles: UInt64
    public var maxNameLength: UInt64

    package init(blockSize: UInt64, fragmentSize: UInt64, blocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64,
                 files: UInt64, freeFiles: UInt64, maxNameLength: UInt64) {
        self.blockSize = blockSize
        self.fragmentSize = fragmentSize
        self.blocks = blocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks
        self.files = files
        self.freeFiles = freeFiles
        self.maxNameLength = maxNameLength
    }
}
