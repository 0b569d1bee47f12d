import Foundation
import GRDB

/// One row of the `entry` table: a pool, directory, file, symlink or special file of the store,
/// with its first name (further names of a hard-linked entry are rows of `link`).
public struct EntryRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "entry"

    public var id: EntryID?
    /// The containing directory; 0 for the root; nil once the name is removed but bytes remain.
    public var parent: EntryID?
    public var name: Data
    /// The pool directory this entry lives in (a pool's own id for the pool itself, 0 for the root).
    public var pool: EntryID
    public var kind: EntryKind
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    public var atime: Int64
    public var mtime: Int64
    public var ctime: Int64
    /// The LRU clock: the last read, in nanoseconds.
    public var lastAccess: Int64
    public var persistent: Bool
    /// See ``PinState/storedValue``.
    public var pinnedUntil: Int64
    /// Per-file max age in seconds; 0 is the pool's default.
    public var expiration: Int64
    /// Set while the file is open for writing; recovery drops cached files still marked.
    public var writing: Bool
    /// Set once the bytes are known to be on disk (synced in the background, or fsync);
    /// after a power loss only durable cached files are kept.
    public var durable: Bool
    /// Names of a file, symlink or special file (hard links); 2 + subdirectories for a
    /// directory, as on ext4; 0 once the last name is gone.
    public var linkCount: UInt32 = 1
    /// The stored bytes' allocation in 512-byte units (`st_blocks`), read from the bytes
    /// whenever they change; smaller than the size for a sparse file.
    public var blocks: Int64 = 0
    /// `st_rdev` of a character or block device.
    public var device: UInt64 = 0
    /// A symlink's target, as given to symlink(2).
    public var target: Data? = nil
    /// What a miss of the file costs, in milliseconds (`user.cache.cost`: its writer's word,
    /// or the time its last origin fetch took); 0 = unknown.
    public var costMilliseconds: Int64 = 0

    package init(id: EntryID?, parent: EntryID?, name: Data, pool: EntryID, kind: EntryKind, mode: UInt32,
                 uid: UInt32, gid: UInt32, size: Int64, atime: Int64, mtime: Int64, ctime: Int64, lastAccess: Int64,
                 persistent: Bool, pinnedUntil: Int64, expiration: Int64, writing: Bool, durable: Bool,
                 linkCount: UInt32 = 1, blocks: Int64 = 0, device: UInt64 = 0, target: Data? = nil,
                 costMilliseconds: Int64 = 0) {
        self.id = id
        self.parent = parent
        self.name = name
        self.pool = pool
        self.kind = kind
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.atime = atime
        self.mtime = mtime
        self.ctime = ctime
        self.lastAccess = lastAccess
        self.persistent = persistent
        self.pinnedUntil = pinnedUntil
        self.expiration = expiration
        self.writing = writing
        self.durable = durable
        self.linkCount = linkCount
        self.blocks = blocks
        self.device = device
        self.target = target
        self.costMilliseconds = costMilliseconds
    }

    package enum CodingKeys: String, CodingKey {
        case id, parent, name, pool, kind, mode, uid, gid, size, atime, mtime, ctime
        case lastAccess = "last_access"
        case persistent
        case pinnedUntil = "pinned_until"
        case expiration, writing, durable
        case linkCount = "nlink"
        case blocks
        case device = "rdev"
        case target
        case costMilliseconds = "cost_ms"
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    public var entryID: EntryID { id ?? 0 }
    public var isPool: Bool { parent == WellKnownEntry.root }

    public var attributes: FileAttributes {
        FileAttributes(
            // A directory shows ext4's one block, so `du` and `ls -l` read as they would there.
            id: entryID, kind: kind, permissions: mode, uid: uid, gid: gid,
            size: kind == .directory ? 4096 : size,
            linkCount: kind == .directory || parent != nil ? linkCount : 0,
            blocks: kind == .directory ? 8 : blocks, device: device,
            accessTime: Timestamp(nanoseconds: atime),
            modificationTime: Timestamp(nanoseconds: mtime),
            changeTime: Timestamp(nanoseconds: ctime))
    }
}

extension EntryRecord {
    /// Whether a read at `time` moves `atime`, by `relatime`'s rule: when it is not newer
    /// than the last change or modification, or a day old. (So a read rarely writes.)
    package static func atimeIsDue(atime: Int64, mtime: Int64, ctime: Int64, at time: Int64) -> Bool {
        atime <= mtime || atime <= ctime || time - atime >= 86_400 * 1_000_000_000
    }

    /// What a write by an unprivileged process does to the mode: the set-user-ID bit goes,
    /// and the set-group-ID bit when group execute is set (without it, it marks mandatory
    /// locking, not privilege). Returns whether the mode changed.
    package mutating func clearSetID() -> Bool {
        let setGroupIDAndExecute = UInt32(S_ISGID | S_IXGRP)
        var cleared = mode & ~UInt32(S_ISUID)
        if cleared & setGroupIDAndExecute == setGroupIDAndExecute { cleared &= ~UInt32(S_ISGID) }
        guard cleared != mode else { return false }
        mode = cleared
        return true
    }

    /// Decodes a row by position, in the table's column order (every query of `entry`
    /// selects `*`). The Decodable path looked each column up by name and took a third of
    /// the daemon's time in an `ls -l`.
    public init(row: Row) {
        id = row[0]
        parent = row[1]
        name = row[2]
        pool = row[3]
        kind = EntryKind(rawValue: row[4]) ?? .file
        mode = row[5]
        uid = row[6]
        gid = row[7]
        size = row[8]
        atime = row[9]
        mtime = row[10]
        ctime = row[11]
        lastAccess = row[12]
        persistent = row[13]
        pinnedUntil = row[14]
        expiration = row[15]
        writing = row[16]
        durable = row[17]
        linkCount = row[18]
        blocks = row[19]
        device = row[20]
        target = row[21]
        costMilliseconds = row[22]
    }

    /// Encodes the columns by name without going through Encodable (every create inserts one
    /// entry and every metadata change writes one back).
    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["parent"] = parent
        container["name"] = name
        container["pool"] = pool
        container["kind"] = kind.rawValue
        container["mode"] = mode
        container["uid"] = uid
        container["gid"] = gid
        container["size"] = size
        container["atime"] = atime
        container["mtime"] = mtime
        container["ctime"] = ctime
        container["last_access"] = lastAccess
        container["persistent"] = persistent
        container["pinned_until"] = pinnedUntil
        container["expiration"] = expiration
        container["writing"] = writing
        container["durable"] = durable
        container["nlink"] = linkCount
        container["blocks"] = blocks
        container["rdev"] = device
        container["target"] = target
        container["cost_ms"] = costMilliseconds
    }

    /// The columns after `id`, in the order of ``columnValues`` (for the index writer's
    /// prepared statements, which skip GRDB's per-record persistence work).
    package static let columnsAfterID = [
        "parent", "name", "pool", "kind", "mode", "uid", "gid", "size", "atime", "mtime", "ctime", "last_access",
        "persistent", "pinned_until", "expiration", "writing", "durable", "nlink", "blocks", "rdev", "target",
        "cost_ms",
    ]

    /// The values of ``columnsAfterID``, then `id`.
    package var columnValues: StatementArguments {
        [parent, name, pool, kind.rawValue, mode, uid, gid, size, atime, mtime, ctime, lastAccess, persistent,
         pinnedUntil, expiration, writing, durable, linkCount, blocks, device, target, costMilliseconds, id]
    }
}

extension EntryRecord {
    /// A new directory's row (a pool's, or one made at store creation).
    package static func directory(name: Data, parent: EntryID, pool: EntryID, mode: UInt32, uid: UInt32, gid: UInt32,
                                  now: Int64) -> EntryRecord {
        EntryRecord(id: nil, parent: parent, name: name, pool: pool, kind: .directory, mode: mode, uid: uid,
                    gid: gid, size: 0, atime: now, mtime: now, ctime: now, lastAccess: now, persistent: false,
                    pinnedUntil: 0, expiration: 0, writing: false, durable: true, linkCount: 2)
    }
}
