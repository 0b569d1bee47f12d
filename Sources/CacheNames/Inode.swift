import CacheModel
import struct Foundation.Data

/// An entry in memory: its record, the newest truth about it, and who holds it.
///
/// Packed, because the namespace holds one per resident entry (136 bytes; an ``EntryRecord``
/// is 184, with optionals and a symlink target most entries lack): ids, sizes and times as
/// 64-bit integers, the flags as bits, the name as `Data` (its bytes inline up to 14, one
/// allocation beyond), and what few entries have (a pin, an expiration of their own, a device
/// number, a symlink target, hard links) in one shared ``InodeExtras``, nil for most. The
/// ``record`` view packs and unpacks, so callers read and change an ``EntryRecord``.
struct Inode: Sendable {
    let id: EntryID
    /// ``Inode/noParent`` once the last name is gone (`EntryRecord.parent == nil`).
    private var parentID: EntryID
    private var pool: EntryID
    private var size: Int64
    private var blocks: Int64
    private var atime: Int64
    private var mtime: Int64
    private var ctime: Int64
    private var lastAccess: Int64
    private var mode: UInt32
    private var uid: UInt32
    private var gid: UInt32
    private var linkCount: UInt32
    private var name: Data
    private var extras: InodeExtras?
    /// The kernel's lookup count (FUSE `nlookup`), dropped by FORGET.
    var lookups: UInt64 = 0
    var openHandles: Int32 = 0
    var writers: Int32 = 0
    /// `EntryRecord.costMilliseconds` (at most about 49 days, as `user.cache.cost` takes); in the padding before
    /// `kind`, so it costs no memory.
    private var costMilliseconds: UInt32 = 0
    private var kind: EntryKind
    private var flags: Flags

    private static let noParent: EntryID = -1

    private struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        static let persistent = Flags(rawValue: 1)
        static let writing = Flags(rawValue: 2)
        static let durable = Flags(rawValue: 4)
        static let keptUntilUnreferenced = Flags(rawValue: 8)
    }

    init(record: EntryRecord) {
        id = record.entryID
        parentID = Self.noParent
        pool = 0
        size = 0
        blocks = 0
        atime = 0
        mtime = 0
        ctime = 0
        lastAccess = 0
        mode = 0
        uid = 0
        gid = 0
        linkCount = 0
        name = Data()
        kind = record.kind
        flags = []
        self.record = record
    }

    /// The entry as the index holds it.
    var record: EntryRecord {
        get {
            let extras = self.extras ?? InodeExtras.none
            return EntryRecord(
                id: id, parent: parentID == Self.noParent ? nil : parentID, name: name, pool: pool, kind: kind,
                mode: mode, uid: uid, gid: gid, size: size, atime: atime, mtime: mtime, ctime: ctime,
                lastAccess: lastAccess, persistent: flags.contains(.persistent), pinnedUntil: extras.pinnedUntil,
                expiration: extras.expiration, writing: flags.contains(.writing), durable: flags.contains(.durable),
                linkCount: linkCount, blocks: blocks, device: extras.device, target: extras.target,
                costMilliseconds: Int64(costMilliseconds))
        }
        set {
            parentID = newValue.parent ?? Self.noParent
            if name != newValue.name { name = newValue.name }
            pool = newValue.pool
            kind = newValue.kind
            mode = newValue.mode
            uid = newValue.uid
            gid = newValue.gid
            size = newValue.size
            atime = newValue.atime
            mtime = newValue.mtime
            ctime = newValue.ctime
            lastAccess = newValue.lastAccess
            linkCount = newValue.linkCount
            blocks = newValue.blocks
            costMilliseconds = UInt32(clamping: newValue.costMilliseconds)
            flags.set(.persistent, newValue.persistent)
            flags.set(.writing, newValue.writing)
            flags.set(.durable, newValue.durable)
            updateExtras {
                $0.pinnedUntil = newValue.pinnedUntil
                $0.expiration = newValue.expiration
                $0.device = newValue.device
                $0.target = newValue.target
            }
        }
    }

    /// Names beyond the record's own (hard links), each in a directory of the same pool.
    var links: [LinkName] {
        get { extras?.links ?? [] }
        set { updateExtras { $0.links = newValue } }
    }

    /// Set when the last name was removed while the entry is still needed (a handle is
    /// open, or the kernel still holds the inode after a user's removal): its bytes and row
    /// stay, a file's size counted in `pending_usage`, until both let go.
    var keptUntilUnreferenced: Bool {
        get { flags.contains(.keptUntilUnreferenced) }
        set { flags.set(.keptUntilUnreferenced, newValue) }
    }

    var isDirectory: Bool { kind == .directory }
    var hasName: Bool { parentID != Self.noParent }
    /// The directory of the record's own name (without building the ``record``).
    var parent: EntryID? { hasName ? parentID : nil }
    /// `EntryRecord.writing` (without building the ``record``).
    var isWriting: Bool { flags.contains(.writing) }
    /// Still needed in memory without a name: the kernel holds it or a handle is open.
    var isReferenced: Bool { lookups > 0 || openHandles > 0 }

    /// Whether `name` in `directory` is one of this entry's names (without building ``names``).
    func isNamed(_ name: Data, in directory: EntryID) -> Bool {
        (parentID == directory && self.name == name) || links.contains(LinkName(parent: directory, name: name))
    }

    /// How many of this entry's names are in `directory`.
    func nameCount(in directory: EntryID) -> Int {
        (parentID == directory ? 1 : 0) + (extras?.links.count { $0.parent == directory } ?? 0)
    }

    /// Every name of the entry: the record's own first, then its hard links.
    var names: [LinkName] {
        guard hasName else { return [] }
        return [LinkName(parent: parentID, name: name)] + links
    }

    /// Every name of the entry in `directory`.
    func names(in directory: EntryID) -> [Data] {
        var result: [Data] = parentID == directory ? [name] : []
        for link in links where link.parent == directory { result.append(link.name) }
        return result
    }

    /// Changes the rarely set fields, allocating their box only when one is set.
    private mutating func updateExtras(_ change: (inout InodeExtras.Values) -> Void) {
        var values = extras?.values ?? InodeExtras.Values()
        change(&values)
        if values == (extras?.values ?? InodeExtras.Values()) { return }
        extras = values == InodeExtras.Values() ? nil : InodeExtras(values)
    }
}

/// The fields few entries set, shared (immutable) between copies of an ``Inode``.
final class InodeExtras: Sendable {
    struct Values: Sendable, Equatable {
        var pinnedUntil: Int64 = 0
        var expiration: Int64 = 0
        var device: UInt64 = 0
        var target: Data?
        var links: [LinkName] = []
    }

    static let none = InodeExtras(Values())

    let values: Values
    var pinnedUntil: Int64 { values.pinnedUntil }
    var expiration: Int64 { values.expiration }
    var device: UInt64 { values.device }
    var target: Data? { values.target }
    var links: [LinkName] { values.links }

    init(_ values: Values) {
        self.values = values
    }
}

private extension OptionSet {
    mutating func set(_ member: Element, _ on: Bool) where Element == Self {
        if on { insert(member) } else { remove(member) }
    }
}

