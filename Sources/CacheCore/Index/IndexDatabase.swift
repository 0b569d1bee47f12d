import CacheModel
import Foundation
import GRDB

/// The SQLite index of a store (GRDB, WAL mode): entries, user xattrs, pool settings, store settings.
///
/// Rule: one `IndexDatabase` per store per process, opened for the life of the mount. GRDB
/// serialises writes and lets reads run in parallel, so any libfuse thread may call in.
public final class IndexDatabase: Sendable {
    let pool: DatabasePool
    /// Called when SQLite finds the disk full; returns whether it freed space to retry with.
    private let freeSpaceForIndex: @Sendable () -> Bool
    /// Where the index lives, and which file it was when opened (see `isRemoved`).
    let path: String
    let openedFile: FileIdentity?
    /// How an encrypted store's rows are sealed; nil for a plaintext store.
    let sealing: IndexSealing?

    /// `encryption` is the unlocked key of an encrypted store: without it such a store's
    /// names and values cannot be read.
    public convenience init(path: String, encryption: StoreEncryption? = nil) throws {
        try self.init(path: path, sealing: encryption.map { IndexSealing($0) })
    }

    init(path: String, sealing: IndexSealing?, freeSpaceForIndex: @escaping @Sendable () -> Bool = { false }) throws {
        self.freeSpaceForIndex = freeSpaceForIndex
        self.sealing = sealing
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL with NORMAL survives a daemon crash intact; power loss may lose the last
            // commits, which recovery treats like a crash (see Recovery).
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        configuration.busyMode = .timeout(Tunables.indexBusySeconds)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Schema.migrator().migrate(pool)
        openedFile = FileIdentity(path: path)
        // Read times the last mount logged but did not fold (all of them after a crash).
        try foldAccessLog()
    }

    /// Every synchronous write goes through here: on a full disk it asks for the unmounted
    /// store's space reserve and retries once, so a mount can recover and start on a full
    /// disk. (Once mounted, the index writer commits inside the log's headroom instead.)
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        do {
            return try pool.write(updates)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL && freeSpaceForIndex() {
            return try pool.write(updates)
        }
    }

    // MARK: - Entries

    // Lookups and listings are single statements: they run without a read transaction
    // (`unsafeRead`) on cached prepared statements, the cheapest way through GRDB.

    public func entry(_ id: EntryID) throws -> EntryRecord? {
        try pool.unsafeRead { db in
            try EntryRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM entry WHERE id = ?"), arguments: [id])
        }.map(plain)
    }

    public func child(of parent: EntryID, named name: Data) throws -> EntryRecord? {
        let stored = try storedName(name, in: parent)
        return try pool.unsafeRead { db in
            try EntryRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM entry WHERE parent = ? AND name = ?"),
                                     arguments: [parent, stored])
        }.map { record in try plain(record, named: name) }
    }

    /// A page of a directory's children, to load it into memory. An encrypted store's rows
    /// are opened on every core (``listable(_:)``), since opening names is most of such a load.
    package func children(of parent: EntryID, after: EntryID, limit: Int) throws -> ChildPage {
        // entry_children is (parent, rowid): each page starts where the last ended.
        let statement = "SELECT * FROM entry WHERE parent = ? AND id > ? ORDER BY id LIMIT ?"
        let stored = try pool.unsafeRead { db in
            try EntryRecord.fetchAll(db.cachedStatement(sql: statement), arguments: [parent, after, limit])
        }
        let rows = sealing == nil ? stored : listableInParallel(stored).compactMap { $0 }
        return ChildPage(rows: rows, lastRead: stored.last?.entryID, isFull: stored.count == limit)
    }

    /// How many rows `parent` has: counted in its `entry_children` index, without reading the
    /// rows (an encrypted store's count includes a row whose name would not open).
    package func childCount(of parent: EntryID) throws -> Int? {
        try pool.unsafeRead { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM entry WHERE parent = ?"), arguments: [parent])
        }
    }

    /// The largest id ever given to an entry (AUTOINCREMENT's record, deleted rows included).
    public func highestEntryID() throws -> EntryID {
        try pool.read { db in
            let sequence = try EntryID.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'entry'") ?? 0
            let largest = try EntryID.fetchOne(db, sql: "SELECT MAX(id) FROM entry") ?? 0
            return max(sequence, largest)
        }
    }

    /// Inserts a new entry; a name already taken answers ``CacheError/exists``.
    public func insert(_ record: EntryRecord) throws -> EntryRecord {
        var stored = try self.stored(record)
        do {
            try write { db in try stored.insert(db) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw CacheError.exists
        }
        var inserted = record
        inserted.id = stored.id
        return inserted
    }

    public func update(_ record: EntryRecord) throws {
        let stored = try self.stored(record)
        try write { db in try stored.update(db) }
    }

    public func delete(_ id: EntryID) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM entry WHERE id = ?", arguments: [id])
        }
    }

    /// Every file entry (for `cachefs verify`, which may read them all), and the ids of
    /// those whose sealed name or target does not open.
    public func allFiles() throws -> (files: [EntryRecord], unopened: [EntryID]) {
        let stored = try pool.read { db in try EntryRecord.fetchAll(db, sql: "SELECT * FROM entry WHERE kind = 2") }
        guard let sealing else { return (stored, []) }
        var files: [EntryRecord] = [], unopened: [EntryID] = []
        for record in stored {
            do {
                files.append(try sealing.plain(record))
            } catch CacheError.io(EIO) {
                unopened.append(record.entryID)
            }
        }
        return (files, unopened)
    }

    /// The ids of every file entry (for recovery, which needs no name).
    func allFileIDs() throws -> Set<EntryID> {
        try pool.read { db in Set(try EntryID.fetchAll(db, sql: "SELECT id FROM entry WHERE kind = 2")) }
    }

    /// Entries a crash may have left behind: nameless ones and files still marked as being written.
    public func unfinishedEntries() throws -> [EntryRecord] {
        try plain(pool.read { db in
            try EntryRecord.fetchAll(db, sql: "SELECT * FROM entry WHERE writing = 1 OR parent IS NULL")
        })
    }

    /// Bytes and file counts of every pool, split by cached and persistent.
    public func usageByPool() throws -> [EntryID: PoolUsage] {
        try pool.read { db in
            var usage: [EntryID: PoolUsage] = [:]
            let rows = try Row.fetchCursor(db, sql: """
                SELECT pool, persistent, COUNT(*), COALESCE(SUM(size), 0) FROM entry
                WHERE kind = 2 AND parent IS NOT NULL GROUP BY pool, persistent
                """)
            while let row = try rows.next() {
                let poolID: EntryID = row[0]
                let persistent: Bool = row[1]
                let count: Int64 = row[2]
                let bytes: Int64 = row[3]
                if persistent {
                    usage[poolID, default: PoolUsage()].persistentBytes += bytes
                    usage[poolID, default: PoolUsage()].persistentFiles += count
                } else {
                    usage[poolID, default: PoolUsage()].cachedBytes += bytes
                    usage[poolID, default: PoolUsage()].cachedFiles += count
                }
            }
            return usage
        }
    }

    /// Runs a WAL checkpoint so the database file alone holds everything (used at unmount).
    public func checkpoint() throws {
        try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }
}

