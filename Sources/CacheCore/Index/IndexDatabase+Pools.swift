import CacheModel
import Foundation
import CachePolicy
import GRDB

/// Pool settings (limits, origin, eviction choice) and store-wide settings.
extension IndexDatabase {
    public func poolSettings() throws -> [EntryID: PoolSettings] {
        let rows = try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM pool") }
        var settings: [EntryID: PoolSettings] = [:]
        for row in rows {
            let poolID: EntryID = row["id"]
            if let sealing, let sealed = row["sealed"] as Data? {
                settings[poolID] = try sealing.plainSettings(sealed, of: poolID)
                continue
            }
            settings[poolID] = PoolSettings(
                maxSize: row["max_size"], maxAgeSeconds: row["max_age"],
                ageBasis: AgeBasis(rawValue: row["age_basis"]) ?? .access,
                maxFiles: row["max_files"], lowWatermarkPercent: row["low_watermark"], origin: row["origin"],
                negativeTTLSeconds: row["negative_ttl"], maxFetches: row["max_fetches"],
                eviction: EvictionChoice(rawValue: row["eviction"]) ?? .lru,
                autoActive: PolicyKind(rawValue: row["eviction_active"]) ?? .lru,
                recordsTrace: row["trace"], minSize: row["min_size"],
                goal: CacheGoal(rawValue: row["goal"]) ?? .files,
                revalidateSeconds: row["revalidate"], staleIfErrorSeconds: row["stale_if_error"],
                admitMaxSize: row["admit_max_size"], admitMinSize: row["admit_min_size"],
                admitAfter: row["admit_after"], admitWindowSeconds: row["admit_window"],
                blockSize: row["block_size"], cacheControl: row["cache_control"], shared: row["shared"],
                sharedMaxFileSize: row["shared_max_file_size"])
        }
        return settings
    }

    public func saveSettings(_ settings: PoolSettings, for poolID: EntryID) throws {
        try write { db in try saveSettings(settings, for: poolID, in: db) }
    }

    /// An encrypted store keeps the whole settings in `sealed` and the defaults in the columns.
    func saveSettings(_ settings: PoolSettings, for poolID: EntryID, in db: Database) throws {
        let sealed = try sealing?.storedSettings(settings, of: poolID)
        let shown = sealed == nil ? settings : PoolSettings()
        try db.execute(sql: """
            INSERT OR REPLACE INTO pool(id, max_size, max_age, age_basis, max_files, low_watermark, origin,
                negative_ttl, max_fetches, eviction, eviction_active, trace, min_size, goal, revalidate,
                stale_if_error, admit_max_size, admit_min_size, admit_after, admit_window, block_size,
                cache_control, shared, shared_max_file_size, sealed)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [poolID, shown.maxSize, shown.maxAgeSeconds, shown.ageBasis.rawValue,
                             shown.maxFiles, shown.lowWatermarkPercent, shown.origin, shown.negativeTTLSeconds,
                             shown.maxFetches, shown.eviction.rawValue, shown.autoActive.rawValue,
                             shown.recordsTrace, shown.minSize, shown.goal.rawValue, shown.revalidateSeconds,
                             shown.staleIfErrorSeconds, shown.admitMaxSize, shown.admitMinSize, shown.admitAfter,
                             shown.admitWindowSeconds, shown.blockSize, shown.cacheControl, shown.shared,
                             shown.sharedMaxFileSize, sealed])
    }

    /// Inserts a pool directory whose id is already chosen, with its settings.
    func insertPool(_ record: EntryRecord, settings: PoolSettings, in db: Database) throws {
        var inserted = try stored(record)
        try inserted.insert(db)
        try saveSettings(settings, for: record.entryID, in: db)
    }

    /// Creates a pool directory and its settings in one transaction, for a store that is not
    /// mounted yet (the id comes from AUTOINCREMENT, so it is never one used before).
    public func insertPool(_ record: EntryRecord, settings: PoolSettings) throws -> EntryRecord {
        var inserted = try stored(record)
        do {
            try write { db in
                try inserted.insert(db)
                inserted.pool = inserted.entryID
                try inserted.update(db)
                try saveSettings(settings, for: inserted.entryID, in: db)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw CacheError.exists
        }
        var created = record
        (created.id, created.pool) = (inserted.id, inserted.entryID)
        return created
    }

    public func setting(_ key: String) throws -> String? {
        // Read every round of the evictor (min_free): a cached statement, one read.
        try pool.unsafeRead { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM setting WHERE key = ?"), arguments: [key])
        }
    }

    public func setSetting(_ key: String, _ value: String) throws {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO setting(key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    /// Sets a directory's link count to 2 + its subdirectories (after pools were added
    /// outside the namespace, at store creation).
    func countSubdirectories(of directory: EntryID) throws {
        try write { db in
            try db.execute(sql: """
                UPDATE entry SET nlink = 2 + (SELECT COUNT(*) FROM entry AS child
                    WHERE child.parent = entry.id AND child.kind = 1) WHERE id = ?
                """, arguments: [directory])
        }
    }
}
