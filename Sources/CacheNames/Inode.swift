import CacheModel
import struct Foundation.Data

/// An entry in memory: its record, the newest truth about it, and who holds it.
///
/// Packed, because the namespace holds one per resident entry (112 bytes; an ``EntryRecord``
/// is 184, with optionals and a symlink target most entries lack): sizes and times as 64-bit
/// integers; ids, the pool, the blocks, the kernel's lookup count and the cost as 32-bit ones
/// and the mode as 16 bits, each with its top value (``Inode/wide``) meaning "too large here,
/// the exact value is in ``InodeExtras/Wide``" (an id or pool past 4 billion, a file of 2 TiB
/// of blocks or more: rare, and exact); the flags as bits, the name as a ``StoredName`` (its bytes
/// inline up to 14, one allocation beyond), and what few entries have (a pin, an expiration of their
/// own, a device number, a symlink target, hard links, a wide value) in one shared
/// ``InodeExtras``, nil for most. The ``record`` view packs and unpacks, so callers read and
/// change an ``EntryRecord``. (Stored properties are laid out in declaration order: 64-bit
/// fields first, then 32, 16 and 8, so no padding is lost; `InodeTests` holds the stride.)
struct Inode: Sendable {
    private var size: Int64
    private var atime: Int64
    private var mtime: Int64
    private var ctime: Int64
    private var lastAccess: Int64
    private var name: StoredName
    private var extras: InodeExtras?
    private var narrowID: UInt32
    /// ``Inode/noParent`` once the last name is gone (`EntryRecord.parent == nil`).
    private var narrowParent: UInt32
    private var narrowPool: UInt32
    private var narrowBlocks: UInt32
    private var uid: UInt32
    private var gid: UInt32
    private var linkCount: UInt32
    private var narrowLookups: UInt32 = 0
    var openHandles: Int32 = 0
    var writers: Int32 = 0
    /// `EntryRecord.costMilliseconds` (at most about 49 days fit, as `user.cache.cost` takes).
    private var narrowCost: UInt32 = 0
    private var narrowMode: UInt16
    private var kind: EntryKind
    private var flags: Flags

    /// A narrow field holding this has its value in ``InodeExtras/Wide``.
    private static let wide = UInt32.max
    private static let wideMode = UInt16.max
    /// The parent of an entry without a name; `wide - 1`, so the parent's narrow range is one shorter.
    private static let noParent = UInt32.max - 1

    private struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        static let persistent = Flags(rawValue: 1)
        static let writing = Flags(rawValue: 2)
        static let durable = Flags(rawValue: 4)
        static let keptUntilUnreferenced = Flags(rawValue: 8)
    }

    init(record: EntryRecord) {
        size = 0
        atime = 0
        mtime = 0
        ctime = 0
        lastAccess = 0
        name = StoredName(Data())
        narrowID = 0
        narrowParent = Self.noParent
        narrowPool = 0
        narrowBlocks = 0
        uid = 0
        gid = 0
        linkCount = 0
        narrowMode = 0
        kind = record.kind
        flags = []
        let id = record.entryID
        if let narrow = Self.narrow(id) {
            narrowID = narrow
        } else {
            narrowID = Self.wide
            updateWide { $0.id = id }
        }
        self.record = record
    }

    /// `EntryRecord.entryID`, fixed at creation.
    var id: EntryID {
        narrowID == Self.wide ? extras!.wide!.values.id : EntryID(narrowID)
    }

    /// The kernel's lookup count (FUSE `nlookup`, a 64-bit count), dropped by FORGET.
    var lookups: UInt64 {
        get { narrowLookups == Self.wide ? extras!.wide!.values.lookups : UInt64(narrowLookups) }
        set {
            if newValue < UInt64(Self.wide) && narrowLookups != Self.wide {
                narrowLookups = UInt32(newValue)
            } else {
                let fits = newValue < UInt64(Self.wide)
                updateWide { $0.lookups = fits ? 0 : newValue }
                narrowLookups = fits ? UInt32(newValue) : Self.wide
            }
        }
    }

    /// The entry as the index holds it.
    var record: EntryRecord {
        get {
            let extras = self.extras ?? InodeExtras.none
            let wide = extras.wide?.values ?? InodeExtras.Wide.Values()
            return EntryRecord(
                id: id, parent: parent, name: name.data,
                pool: narrowPool == Self.wide ? wide.pool : EntryID(narrowPool), kind: kind,
                mode: narrowMode == Self.wideMode ? wide.mode : UInt32(narrowMode), uid: uid, gid: gid, size: size,
                atime: atime, mtime: mtime, ctime: ctime, lastAccess: lastAccess,
                persistent: flags.contains(.persistent), pinnedUntil: extras.pinnedUntil,
                expiration: extras.expiration, writing: flags.contains(.writing), durable: flags.contains(.durable),
                linkCount: linkCount, blocks: narrowBlocks == Self.wide ? wide.blocks : Int64(narrowBlocks),
                device: extras.device, target: extras.target,
                costMilliseconds: narrowCost == Self.wide ? wide.costMilliseconds : Int64(narrowCost))
        }
        set {
            if !name.equals(newValue.name) { name = StoredName(newValue.name) }
            kind = newValue.kind
            uid = newValue.uid
            gid = newValue.gid
            size = newValue.size
            atime = newValue.atime
            mtime = newValue.mtime
            ctime = newValue.ctime
            lastAccess = newValue.lastAccess
            linkCount = newValue.linkCount
            flags.set(.persistent, newValue.persistent)
            flags.set(.writing, newValue.writing)
            flags.set(.durable, newValue.durable)
            // Each narrow field, or its top value and the exact one among the wide values.
            var wide = extras?.wide?.values ?? InodeExtras.Wide.Values()
            if let parent = newValue.parent {
                if let narrow = Self.narrow(parent, below: Self.noParent) {
                    narrowParent = narrow
                    wide.parent = 0
                } else {
                    narrowParent = Self.wide
                    wide.parent = parent
                }
            } else {
                narrowParent = Self.noParent
                wide.parent = 0
            }
            narrowPool = Self.narrow(newValue.pool) ?? Self.wide
            wide.pool = narrowPool == Self.wide ? newValue.pool : 0
            narrowBlocks = Self.narrow(newValue.blocks) ?? Self.wide
            wide.blocks = narrowBlocks == Self.wide ? newValue.blocks : 0
            narrowCost = Self.narrow(newValue.costMilliseconds) ?? Self.wide
            wide.costMilliseconds = narrowCost == Self.wide ? newValue.costMilliseconds : 0
            narrowMode = newValue.mode < UInt32(Self.wideMode) ? UInt16(newValue.mode) : Self.wideMode
            wide.mode = narrowMode == Self.wideMode ? newValue.mode : 0
            updateExtras {
                $0.pinnedUntil = newValue.pinnedUntil
                $0.expiration = newValue.expiration
                $0.device = newValue.device
                $0.target = newValue.target
                $0.wide = InodeExtras.Wide.box(wide, reusing: $0.wide)
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
    var hasName: Bool { narrowParent != Self.noParent }
    /// The directory of the record's own name (without building the ``record``).
    var parent: EntryID? {
        switch narrowParent {
        case Self.noParent: nil
        case Self.wide: extras!.wide!.values.parent
        default: EntryID(narrowParent)
        }
    }
    /// `EntryRecord.writing` (without building the ``record``).
    var isWriting: Bool { flags.contains(.writing) }
    /// Still needed in memory without a name: the kernel holds it or a handle is open.
    var isReferenced: Bool { lookups > 0 || openHandles > 0 }

    /// Whether `name` in `directory` is one of this entry's names (without building ``names``).
    func isNamed(_ name: Data, in directory: EntryID) -> Bool {
        (parent == directory && self.name.equals(name)) || links.contains(LinkName(parent: directory, name: name))
    }

    /// How many of this entry's names are in `directory`.
    func nameCount(in directory: EntryID) -> Int {
        (parent == directory ? 1 : 0) + (extras?.links.count { $0.parent == directory } ?? 0)
    }

    /// Every name of the entry: the record's own first, then its hard links.
    var names: [LinkName] {
        guard let parent else { return [] }
        return [LinkName(parent: parent, name: name.data)] + links
    }

    /// Every name of the entry in `directory`.
    func names(in directory: EntryID) -> [Data] {
        var result: [Data] = parent == directory ? [name.data] : []
        for link in links where link.parent == directory { result.append(link.name) }
        return result
    }

    /// `value` as a narrow field, if it is in `0..<limit`.
    private static func narrow(_ value: Int64, below limit: UInt32 = wide) -> UInt32? {
        value >= 0 && value < Int64(limit) ? UInt32(value) : nil
    }

    /// Changes the wide values, keeping the rest of the extras.
    private mutating func updateWide(_ change: (inout InodeExtras.Wide.Values) -> Void) {
        var wide = extras?.wide?.values ?? InodeExtras.Wide.Values()
        change(&wide)
        updateExtras { $0.wide = InodeExtras.Wide.box(wide, reusing: $0.wide) }
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
        var wide: Wide?
    }

    /// The exact values of an inode's narrow fields that hold ``Inode``'s top value (0 for
    /// the others); nil when none does, as for almost every entry.
    final class Wide: Sendable, Equatable {
        struct Values: Sendable, Equatable {
            var id: EntryID = 0
            var parent: EntryID = 0
            var pool: EntryID = 0
            var blocks: Int64 = 0
            var costMilliseconds: Int64 = 0
            var lookups: UInt64 = 0
            var mode: UInt32 = 0
        }

        let values: Values

        init(_ values: Values) {
            self.values = values
        }

        /// A box for `values`: nil when every one is 0, `old` when it holds the same.
        static func box(_ values: Values, reusing old: Wide?) -> Wide? {
            if values == Values() { return nil }
            if let old, old.values == values { return old }
            return Wide(values)
        }

        static func == (lhs: Wide, rhs: Wide) -> Bool { lhs.values == rhs.values }
    }

    static let none = InodeExtras(Values())

    let values: Values
    var pinnedUntil: Int64 { values.pinnedUntil }
    var expiration: Int64 { values.expiration }
    var device: UInt64 { values.device }
    var target: Data? { values.target }
    var links: [LinkName] { values.links }
    var wide: Wide? { values.wide }

    init(_ values: Values) {
        self.values = values
    }
}

private extension OptionSet {
    mutating func set(_ member: Element, _ on: Bool) where Element == Self {
        if on { insert(member) } else { remove(member) }
    }
}
