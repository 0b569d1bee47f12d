import CacheModel

/// A unit (`user.cache.unit`) as a pass sees it: all the files beneath its root, which go
/// together or not at all, at the time of the most recently read of them.
struct EvictionUnit: Sendable {
    /// The root directory's row (its path names the unit in events and previews).
    let root: EntryRecord
    let files: [EntryRecord]
    /// The cached bytes of its files: what evicting it frees from its pool.
    let cachedBytes: Int64
    /// The newest last read of its files (reads not flushed yet included, for a preview).
    let lastAccess: Int64
    /// Whether every file may go now: a pinned, persistent or half-written file keeps the
    /// whole unit.
    let mayGo: Bool

    init(root: EntryRecord, files: [EntryRecord], pending: [EntryID: Int64], mayGo: Bool) {
        self.root = root
        self.files = files
        cachedBytes = files.reduce(0) { $0 + ($1.persistent ? 0 : $1.size) }
        lastAccess = files.map { max(pending[$0.entryID] ?? 0, $0.lastAccess) }.max() ?? root.lastAccess
        self.mayGo = mayGo
    }

    /// Its place in an LRU order, with ties broken as the index breaks them (by id).
    var order: (Int64, EntryID) { (lastAccess, root.entryID) }
}

/// One step of an eviction order: one file, or one unit's files.
struct VictimGroup: Sendable {
    let files: [EntryRecord]
    let unit: EvictionUnit?
    let lastAccess: Int64

    static func file(_ record: EntryRecord, lastAccess: Int64) -> VictimGroup {
        VictimGroup(files: [record], unit: nil, lastAccess: lastAccess)
    }

    static func unit(_ unit: EvictionUnit) -> VictimGroup {
        VictimGroup(files: unit.files, unit: unit, lastAccess: unit.lastAccess)
    }

    /// What it frees from its pool.
    var bytes: Int64 { unit?.cachedBytes ?? files.reduce(0) { $0 + $1.size } }
}
