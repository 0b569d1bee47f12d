import CacheModel
import struct Foundation.Data

/// An entry in memory: its record, the newest truth about it, and who holds it.
///
/// Packed, because the namespace holds one per resident entry (80 bytes; an ``EntryRecord``
/// is 184, with optionals and a symlink target most entries lack): times as 64-bit integers;
/// the size in 48 bits beside the cost in 16; ids as 32-bit integers; the pool, owner, group
/// and mode, which most entries share with many others, as a 16-bit number in
/// ``InodeProfiles``; the kernel's lookup count as 16 bits, the open handles, writers and link
/// count as 8. Each narrow field's top value (``Inode/wide``) means "too large here, the exact
/// value is in ``InodeExtras/Wide``" (an id past 4 billion, a file open 255 times, a
/// directory with 253 subdirectories, a cost of more than a minute, a 65,536th profile: rare,
/// and exact); the block count not at all when it is the size's whole 4 KiB blocks
/// (``Tunables/blocks(forSize:)``, as ext4 allocates a file written through), and in
/// ``InodeExtras/Wide`` when not; the kind and the flags in one byte, the name as a
/// ``StoredName`` (its bytes inline up to 14, one allocation beyond), and what few entries
/// have (a pin, an expiration of their own, a device number, a symlink target, hard links, a
/// wide value) in one shared ``InodeExtras``, nil for most. The ``record`` view packs and
/// unpacks, so callers read and change an ``EntryRecord``. (Stored properties are laid out in
/// declaration order: 64-bit fields first, then 32, 16 and 8, so no padding is lost;
/// `InodeTests` holds the stride.)
struct Inode: Sendable {
    private var atime: Int64
    private var mtime: Int64
    private var ctime: Int64
    private var lastAccess: Int64
    /// The size in the low 48 bits, `EntryRecord.costMilliseconds` in the high 16, each with
    /// its top value meaning "in ``InodeExtras/Wide``".
    private var sizeAndCost: UInt64
    private var name: StoredName
    private var extras: InodeExtras?
    private var narrowID: UInt32
    /// ``Inode/noParent`` once the last name is gone (`EntryRecord.parent == nil`).
    private var narrowParent: UInt32
    /// The pool, owner, group and mode, as their number in ``InodeProfiles``.
    private var profileNumber: UInt16
    private var narrowLookups: UInt16 = 0
    private var narrowHandles: UInt8 = 0
    private var narrowWriters: UInt8 = 0
    private var narrowLinkCount: UInt8
    private var bits: Bits

    /// A narrow field holding its type's largest value has its value in ``InodeExtras/Wide``.
    private static let wide = UInt32.max
    private static let wide16 = UInt16.max
    private static let wide8 = UInt8.max
    private static let sizeBits = 48
    private static let wideSize = UInt64(1) << sizeBits - 1
    /// The parent of an entry without a name; `wide - 1`, so the parent's narrow range is one shorter.
    private static let noParent = UInt32.max - 1

    /// The kind in the low three bits (`EntryKind` is 1 to 7), the flags above.
    private struct Bits: Sendable {
        static let persistent: UInt8 = 1 << 3
        static let writing: UInt8 = 1 << 4
        static let durable: UInt8 = 1 << 5
        static let keptUntilUnreferenced: UInt8 = 1 << 6
        /// The block count is ``Tunables/blocks(forSize:)`` of the size.
        static let blocksFollowSize: UInt8 = 1 << 7
        private static let kindMask: UInt8 = 0b111

        private var raw: UInt8

        init(kind: EntryKind) {
            raw = UInt8(kind.rawValue)
        }

        var kind: EntryKind {
            get { EntryKind(rawValue: Int(raw & Self.kindMask))! }
            set { raw = raw & ~Self.kindMask | UInt8(newValue.rawValue) }
        }

        func contains(_ flag: UInt8) -> Bool { raw & flag != 0 }

        mutating func set(_ flag: UInt8, _ on: Bool) {
            raw = on ? raw | flag : raw & ~flag
        }
    }

    /// `profileTableIsFull` is for tests: the inode keeps its pool, owner, group and mode
    /// itself, as every inode does once ``InodeProfiles/capacity`` profiles are in the table.
    init(record: EntryRecord, profileTableIsFull: Bool = false) {
        atime = 0
        mtime = 0
        ctime = 0
        lastAccess = 0
        sizeAndCost = 0
        name = StoredName(Data())
        narrowID = 0
        narrowParent = Self.noParent
        profileNumber = Self.wide16
        narrowLinkCount = 0
        bits = Bits(kind: record.kind)
        let id = record.entryID
        if let narrow = Self.narrow(id) {
            narrowID = narrow
        } else {
            narrowID = Self.wide
            updateWide { $0.id = id }
        }
        set(record, profileTableIsFull: profileTableIsFull)
    }

    /// `EntryRecord.entryID`, fixed at creation.
    var id: EntryID {
        narrowID == Self.wide ? extras!.wide!.values.id : EntryID(narrowID)
    }

    /// The kernel's lookup count (FUSE `nlookup`, a 64-bit count), dropped by FORGET.
    var lookups: UInt64 {
        get { narrowLookups == Self.wide16 ? extras!.wide!.values.lookups : UInt64(narrowLookups) }
        set {
            let (narrow, wide) = Self.counter(newValue, replacing: narrowLookups)
            if let wide { updateWide { $0.lookups = wide } }
            narrowLookups = narrow
        }
    }

    /// Handles open on the entry (OPEN and CREATE, less RELEASE).
    var openHandles: Int32 {
        get { narrowHandles == Self.wide8 ? extras!.wide!.values.openHandles : Int32(narrowHandles) }
        set {
            let (narrow, wide) = Self.counter(newValue, replacing: narrowHandles)
            if let wide { updateWide { $0.openHandles = wide } }
            narrowHandles = narrow
        }
    }

    /// Of the open handles, those that may write.
    var writers: Int32 {
        get { narrowWriters == Self.wide8 ? extras!.wide!.values.writers : Int32(narrowWriters) }
        set {
            let (narrow, wide) = Self.counter(newValue, replacing: narrowWriters)
            if let wide { updateWide { $0.writers = wide } }
            narrowWriters = narrow
        }
    }

    /// The entry as the index holds it.
    var record: EntryRecord {
        get {
            let extras = self.extras ?? InodeExtras.none
            let wide = extras.wide?.values ?? InodeExtras.Wide.Values()
            let profile = profileNumber == Self.wide16 ? wide.profile : InodeProfiles.shared.profile(profileNumber)
            let size = self.size
            let narrowCost = sizeAndCost >> Self.sizeBits
            return EntryRecord(
                id: id, parent: parent, name: name.data,
                pool: profile.pool, kind: bits.kind,
                mode: profile.mode, uid: profile.uid, gid: profile.gid, size: size,
                atime: atime, mtime: mtime, ctime: ctime, lastAccess: lastAccess,
                persistent: bits.contains(Bits.persistent), pinnedUntil: extras.pinnedUntil,
                expiration: extras.expiration, writing: bits.contains(Bits.writing),
                durable: bits.contains(Bits.durable),
                linkCount: narrowLinkCount == Self.wide8 ? wide.linkCount : UInt32(narrowLinkCount),
                blocks: bits.contains(Bits.blocksFollowSize) ? Self.blocks(forSize: size)! : wide.blocks,
                device: extras.device, target: extras.target,
                costMilliseconds: narrowCost == UInt64(Self.wide16) ? wide.costMilliseconds : Int64(narrowCost))
        }
        set { set(newValue, profileTableIsFull: false) }
    }

    /// `EntryRecord.size` (without building the ``record``).
    var size: Int64 {
        let narrow = sizeAndCost & Self.wideSize
        return narrow == Self.wideSize ? extras!.wide!.values.size : Int64(narrow)
    }

    /// Sets every field from `record`.
    private mutating func set(_ newValue: EntryRecord, profileTableIsFull: Bool) {
        if !name.equals(newValue.name) { name = StoredName(newValue.name) }
        bits.kind = newValue.kind
        atime = newValue.atime
        mtime = newValue.mtime
        ctime = newValue.ctime
        lastAccess = newValue.lastAccess
        bits.set(Bits.persistent, newValue.persistent)
        bits.set(Bits.writing, newValue.writing)
        bits.set(Bits.durable, newValue.durable)
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
        let profile = InodeProfile(pool: newValue.pool, uid: newValue.uid, gid: newValue.gid, mode: newValue.mode)
        if profileNumber == Self.wide16 || InodeProfiles.shared.profile(profileNumber) != profile {
            profileNumber = (profileTableIsFull ? nil : InodeProfiles.shared.number(for: profile)) ?? Self.wide16
        }
        wide.profile = profileNumber == Self.wide16 ? profile : InodeProfile.zero
        let narrowSize = newValue.size >= 0 && UInt64(newValue.size) < Self.wideSize
            ? UInt64(newValue.size) : Self.wideSize
        wide.size = narrowSize == Self.wideSize ? newValue.size : 0
        let narrowCost = Self.narrow16(newValue.costMilliseconds) ?? Self.wide16
        wide.costMilliseconds = narrowCost == Self.wide16 ? newValue.costMilliseconds : 0
        sizeAndCost = UInt64(narrowCost) << Self.sizeBits | narrowSize
        let followsSize = Self.blocks(forSize: newValue.size) == newValue.blocks
        bits.set(Bits.blocksFollowSize, followsSize)
        wide.blocks = followsSize ? 0 : newValue.blocks
        narrowLinkCount = Self.narrow8(Int64(newValue.linkCount)) ?? Self.wide8
        wide.linkCount = narrowLinkCount == Self.wide8 ? newValue.linkCount : 0
        updateExtras {
            $0.pinnedUntil = newValue.pinnedUntil
            $0.expiration = newValue.expiration
            $0.device = newValue.device
            $0.target = newValue.target
            $0.wide = InodeExtras.Wide.box(wide, reusing: $0.wide)
        }
    }

    /// Bytes the inode holds beyond its own: a name longer than 14 bytes and the extras few
    /// entries have (``InodeExtras``), what ``InodeTable/heapBytes`` adds up.
    var heapBytes: Int { name.heapBytes + (extras?.heapBytes ?? 0) }

    /// Names beyond the record's own (hard links), each in a directory of the same pool.
    var links: [LinkName] {
        get { extras?.links ?? [] }
        set { updateExtras { $0.links = newValue } }
    }

    /// Set when the last name was removed while the entry is still needed (a handle is
    /// open, or the kernel still holds the inode after a user's removal): its bytes and row
    /// stay, a file's size counted in `pending_usage`, until both let go.
    var keptUntilUnreferenced: Bool {
        get { bits.contains(Bits.keptUntilUnreferenced) }
        set { bits.set(Bits.keptUntilUnreferenced, newValue) }
    }

    var isDirectory: Bool { bits.kind == .directory }
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
    var isWriting: Bool {
        get { bits.contains(Bits.writing) }
        set { bits.set(Bits.writing, newValue) }
    }
    /// Whether a read at `time` moves atime (`EntryRecord.atimeIsDue` of this inode's times).
    func atimeIsDue(at time: Int64) -> Bool {
        EntryRecord.atimeIsDue(atime: atime, mtime: mtime, ctime: ctime, at: time)
    }
    /// Sets `EntryRecord.atime` (without building the ``record``).
    mutating func setAccessTime(_ time: Int64) { atime = time }
    /// Still needed in memory without a name: the kernel holds it or a handle is open.
    var isReferenced: Bool { lookups > 0 || openHandles > 0 }

    /// Whether `name` in `directory` is one of this entry's names (without building ``names``).
    /// Whether `name` in `directory` is the record's own name (not a hard link's).
    func hasOwnName(_ name: Data, in directory: EntryID) -> Bool {
        parent == directory && self.name.equals(name)
    }

    func withOwnNameBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        name.withBytes(body)
    }

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

    /// `value` as a 16-bit narrow field, if it is below ``wide16``.
    private static func narrow16(_ value: Int64) -> UInt16? {
        value >= 0 && value < Int64(wide16) ? UInt16(value) : nil
    }

    /// `value` as an 8-bit narrow field, if it is below ``wide8``.
    private static func narrow8(_ value: Int64) -> UInt8? {
        value >= 0 && value < Int64(wide8) ? UInt8(value) : nil
    }

    /// ``Tunables/blocks(forSize:)``, or nil for a size it does not apply to (negative, or
    /// within a block of `Int64.max`, where rounding up would overflow).
    private static func blocks(forSize size: Int64) -> Int64? {
        size >= 0 && size <= Int64.max - 4095 ? Tunables.blocks(forSize: size) : nil
    }

    /// What a narrow counter holding `current` becomes for `value`: the value itself, or its
    /// type's top value with `value` kept among the wide values; `wide` is what the wide value
    /// must be set to (0 once the counter fits again), nil when it stays as it is. (Not key
    /// paths: the hit path sets two counters per OPEN and RELEASE, and a key path is looked up
    /// at run time.)
    private static func counter<Narrow: FixedWidthInteger & UnsignedInteger, Value: FixedWidthInteger>(
        _ value: Value, replacing current: Narrow
    ) -> (narrow: Narrow, wide: Value?) {
        let narrow = value >= 0 && value < Value(Narrow.max) ? Narrow(value) : nil
        if let narrow, current != Narrow.max { return (narrow, nil) }
        return (narrow ?? Narrow.max, narrow == nil ? value : 0)
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
            var profile = InodeProfile.zero
            var size: Int64 = 0
            var blocks: Int64 = 0
            var costMilliseconds: Int64 = 0
            var lookups: UInt64 = 0
            var openHandles: Int32 = 0
            var writers: Int32 = 0
            var linkCount: UInt32 = 0
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

    /// Bytes this box and what it holds take from the allocator (approximately: a name's
    /// `Data` beyond 14 bytes as one allocation, an array as its header and elements).
    var heapBytes: Int {
        let links = values.links.isEmpty ? 0
            : HeapSize.allocation(32 + values.links.count * MemoryLayout<LinkName>.stride)
            + values.links.reduce(0) { $0 + HeapSize.data($1.name) }
        let wide = values.wide.map { _ in HeapSize.allocation(16 + MemoryLayout<Wide.Values>.stride) } ?? 0
        return HeapSize.allocation(16 + MemoryLayout<Values>.stride) + HeapSize.data(values.target) + links + wide
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
