import CacheModel
import GRDB

/// The index's tables, created and upgraded by GRDB migrations.
enum Schema {
    /// The rows the evictor may choose: named, cached (not persistent), unpinned, whole files
    /// (not `writing`: being written, or an origin's file not all fetched, which may hold no
    /// bytes at all). Every victim query repeats this condition so SQLite uses the partial
    /// indexes, which makes choosing the next victim O(log n). Pin leases are reset to 0 when
    /// they end.
    static let evictable = "kind = 2 AND persistent = 0 AND pinned_until = 0 AND parent IS NOT NULL AND writing = 0"

    /// The condition of the evictable indexes v1 and v3 created (migrations never change).
    private static let evictableBeforeV5 = "kind = 2 AND persistent = 0 AND pinned_until = 0 AND parent IS NOT NULL"

    /// When a file with an expiration of its own expires, by each age basis. Queries must
    /// spell these exactly as the indexes do for SQLite to use them.
    static let ownExpiryByAccess = "last_access + expiration * 1000000000"
    static let ownExpiryByModification = "mtime + expiration * 1000000000"

    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE entry(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    parent INTEGER,
                    name BLOB NOT NULL,
                    pool INTEGER NOT NULL,
                    kind INTEGER NOT NULL,
                    mode INTEGER NOT NULL,
                    uid INTEGER NOT NULL,
                    gid INTEGER NOT NULL,
                    size INTEGER NOT NULL DEFAULT 0,
                    atime INTEGER NOT NULL,
                    mtime INTEGER NOT NULL,
                    ctime INTEGER NOT NULL,
                    last_access INTEGER NOT NULL,
                    persistent INTEGER NOT NULL DEFAULT 0,
                    pinned_until INTEGER NOT NULL DEFAULT 0,
                    expiration INTEGER NOT NULL DEFAULT 0,
                    writing INTEGER NOT NULL DEFAULT 0,
                    durable INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX entry_not_durable ON entry(id) WHERE durable = 0 AND kind = 2 AND writing = 0
                    AND parent IS NOT NULL;
                CREATE UNIQUE INDEX entry_by_name ON entry(parent, name) WHERE parent IS NOT NULL;
                CREATE INDEX entry_children ON entry(parent);
                CREATE INDEX entry_unfinished ON entry(id) WHERE writing = 1 OR parent IS NULL;
                CREATE INDEX entry_lru ON entry(pool, last_access) WHERE \(evictableBeforeV5);
                CREATE INDEX entry_global_lru ON entry(last_access) WHERE \(evictableBeforeV5);
                CREATE INDEX entry_by_mtime ON entry(pool, mtime) WHERE \(evictableBeforeV5);
                CREATE INDEX entry_own_expiry ON entry(expiration) WHERE expiration > 0 AND \(evictableBeforeV5);
                CREATE INDEX entry_leases ON entry(pinned_until) WHERE pinned_until > 0;
                CREATE INDEX entry_pinned ON entry(pool) WHERE pinned_until != 0 AND kind = 2;
                CREATE TABLE xattr(
                    entry INTEGER NOT NULL REFERENCES entry(id) ON DELETE CASCADE,
                    name BLOB NOT NULL,
                    value BLOB NOT NULL,
                    PRIMARY KEY(entry, name)
                ) WITHOUT ROWID;
                CREATE TABLE pool(
                    id INTEGER PRIMARY KEY REFERENCES entry(id) ON DELETE CASCADE,
                    max_size INTEGER NOT NULL,
                    max_age INTEGER NOT NULL,
                    age_basis TEXT NOT NULL,
                    max_files INTEGER NOT NULL,
                    low_watermark INTEGER NOT NULL
                );
                CREATE TABLE setting(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """)
        }
        // Symlinks, hard links and special files (see EntryKind): the further names of an
        // entry, link counts, the bytes' allocation, device numbers and symlink targets.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN nlink INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE entry ADD COLUMN blocks INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE entry ADD COLUMN rdev INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE entry ADD COLUMN target BLOB;
                UPDATE entry SET nlink = 2 + (SELECT COUNT(*) FROM entry AS child
                    WHERE child.parent = entry.id AND child.kind = 1) WHERE kind = 1;
                UPDATE entry SET nlink = 0 WHERE parent IS NULL AND kind != 1;
                UPDATE entry SET blocks = (size + 4095) / 4096 * 8 WHERE kind = 2;
                CREATE TABLE link(
                    parent INTEGER NOT NULL,
                    name BLOB NOT NULL,
                    entry INTEGER NOT NULL REFERENCES entry(id) ON DELETE CASCADE,
                    PRIMARY KEY(parent, name)
                ) WITHOUT ROWID;
                CREATE INDEX link_by_entry ON link(entry);
                """)
        }
        // The evictor asks for the next expiry every round: O(log n) with these.
        migrator.registerMigration("v3-expiry") { db in
            try db.execute(sql: """
                CREATE INDEX entry_own_expiry_by_access ON entry(pool, \(ownExpiryByAccess))
                    WHERE expiration > 0 AND \(evictableBeforeV5);
                CREATE INDEX entry_own_expiry_by_mtime ON entry(pool, \(ownExpiryByModification))
                    WHERE expiration > 0 AND \(evictableBeforeV5);
                """)
        }
        // Read-through pools: the origin URL of a pool (empty for none), how long a miss of the
        // origin is remembered, and how many fetches from it may run at once.
        migrator.registerMigration("v4-origin") { db in
            try db.execute(sql: """
                ALTER TABLE pool ADD COLUMN origin TEXT NOT NULL DEFAULT '';
                ALTER TABLE pool ADD COLUMN negative_ttl INTEGER NOT NULL DEFAULT \(PoolSettings.defaultNegativeTTLSeconds);
                ALTER TABLE pool ADD COLUMN max_fetches INTEGER NOT NULL DEFAULT \(PoolSettings.defaultMaxFetches);
                """)
        }
        // Files marked `writing` (an origin's files shown but not fetched, or being fetched or
        // written) are no victims: the evictable indexes leave them out.
        migrator.registerMigration("v5-evictable-whole-files") { db in
            try db.execute(sql: """
                DROP INDEX entry_lru;
                DROP INDEX entry_global_lru;
                DROP INDEX entry_by_mtime;
                DROP INDEX entry_own_expiry;
                DROP INDEX entry_own_expiry_by_access;
                DROP INDEX entry_own_expiry_by_mtime;
                CREATE INDEX entry_lru ON entry(pool, last_access) WHERE \(evictable);
                CREATE INDEX entry_global_lru ON entry(last_access) WHERE \(evictable);
                CREATE INDEX entry_by_mtime ON entry(pool, mtime) WHERE \(evictable);
                CREATE INDEX entry_own_expiry ON entry(expiration) WHERE expiration > 0 AND \(evictable);
                CREATE INDEX entry_own_expiry_by_access ON entry(pool, \(ownExpiryByAccess))
                    WHERE expiration > 0 AND \(evictable);
                CREATE INDEX entry_own_expiry_by_mtime ON entry(pool, \(ownExpiryByModification))
                    WHERE expiration > 0 AND \(evictable);
                """)
        }
        // Usage totals kept by the index itself: triggers move the `usage` row of a pool in the
        // same transaction as any entry row that counts (a named file), so a mount reads O(pools)
        // rows and no crash can leave them apart from the entries.
        migrator.registerMigration("v6-usage") { db in
            try db.execute(sql: """
                CREATE TABLE usage(
                    pool INTEGER NOT NULL,
                    persistent INTEGER NOT NULL,
                    files INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    PRIMARY KEY(pool, persistent)
                ) WITHOUT ROWID;
                \(UsageTotals.recomputeSQL)
                CREATE TRIGGER usage_after_insert AFTER INSERT ON entry
                WHEN \(UsageTotals.counts("NEW")) BEGIN
                    \(UsageTotals.addSQL("NEW"))
                END;
                CREATE TRIGGER usage_after_delete AFTER DELETE ON entry
                WHEN \(UsageTotals.counts("OLD")) BEGIN
                    \(UsageTotals.subtractSQL("OLD"))
                END;
                CREATE TRIGGER usage_after_update AFTER UPDATE OF parent, pool, kind, persistent, size ON entry
                WHEN (\(UsageTotals.counts("OLD")) OR \(UsageTotals.counts("NEW"))) AND (OLD.size IS NOT NEW.size
                    OR OLD.pool IS NOT NEW.pool OR OLD.persistent IS NOT NEW.persistent OR OLD.kind IS NOT NEW.kind
                    OR (OLD.parent IS NULL) IS NOT (NEW.parent IS NULL)) BEGIN
                    \(UsageTotals.subtractSQL("OLD", when: UsageTotals.counts("OLD")))
                    \(UsageTotals.addSQL("NEW", when: UsageTotals.counts("NEW")))
                END;
                DELETE FROM setting WHERE key = 'usage_totals';
                """)
        }
        // `entry_by_name` (parent, name) serves every `parent = ?` query (SQLite knows that
        // `parent = ?` implies its `parent IS NOT NULL`), so this index only cost each create,
        // move and removal one more b-tree to write.
        migrator.registerMigration("v7-drop-entry-children") { db in
            try db.execute(sql: "DROP INDEX entry_children")
        }
        // Replacement policies: the pool's `user.cache.eviction` choice, the policy `auto`
        // runs now (so a remount starts from what the pool's own reads chose), and whether
        // the pool records its accesses (`user.cache.trace`).
        migrator.registerMigration("v8-eviction-policy") { db in
            try db.execute(sql: """
                ALTER TABLE pool ADD COLUMN eviction TEXT NOT NULL DEFAULT 'lru';
                ALTER TABLE pool ADD COLUMN eviction_active TEXT NOT NULL DEFAULT 'lru';
                ALTER TABLE pool ADD COLUMN trace INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // A pool's floor under disk pressure (`user.cache.min_size`).
        migrator.registerMigration("v9-min-size") { db in
            try db.execute(sql: "ALTER TABLE pool ADD COLUMN min_size INTEGER NOT NULL DEFAULT 0")
        }
        // An encrypted store's pool settings, sealed whole (origin included); its columns then
        // hold the defaults (see IndexSealing).
        migrator.registerMigration("v10-sealed-policy") { db in
            try db.execute(sql: "ALTER TABLE pool ADD COLUMN sealed BLOB")
        }
        // What a pool's evictions save (`user.cache.goal`), and what a miss of each file costs
        // in milliseconds (`user.cache.cost`, or its last fetch's time; 0 = unknown).
        migrator.registerMigration("v11-goal-and-cost") { db in
            try db.execute(sql: """
                ALTER TABLE pool ADD COLUMN goal TEXT NOT NULL DEFAULT 'files';
                ALTER TABLE entry ADD COLUMN cost_ms INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // Every victim query names its pool (`entry_lru` serves them all), so this index of
        // every cached file by its last read was read by nothing, and written by every
        // create, removal and flush of access times.
        migrator.registerMigration("v12-drop-entry-global-lru") { db in
            try db.execute(sql: "DROP INDEX entry_global_lru")
        }
        // Read-through pools: how long a fetched file is trusted before its next open asks the
        // origin (-1 = never), and how long past that it is served while the origin is down;
        // which of the origin's files are kept (size bounds, 0 = none; misses before keeping).
        migrator.registerMigration("v13-freshness-and-admission") { db in
            try db.execute(sql: """
                ALTER TABLE pool ADD COLUMN revalidate INTEGER NOT NULL DEFAULT \(PoolSettings.neverRevalidate);
                ALTER TABLE pool ADD COLUMN stale_if_error INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE pool ADD COLUMN admit_max_size INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE pool ADD COLUMN admit_min_size INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE pool ADD COLUMN admit_after INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE pool ADD COLUMN admit_window INTEGER NOT NULL DEFAULT \(PoolSettings.defaultAdmitWindowSeconds);
                """)
        }
        // Read-through pools: the bytes fetched from the origin at a time (4 MiB; 0 = whole files).
        migrator.registerMigration("v14-blocks") { db in
            try db.execute(sql: "ALTER TABLE pool ADD COLUMN block_size INTEGER NOT NULL DEFAULT \(PoolSettings.defaultBlockSize)")
        }
        // Read-through pools: whether the origin's HTTP Cache-Control is honoured (0 = no).
        migrator.registerMigration("v15-cache-control") { db in
            try db.execute(sql: "ALTER TABLE pool ADD COLUMN cache_control INTEGER NOT NULL DEFAULT 0;")
        }
        // Pools' shared tier (docs/shared-tier.md): its URL (never a password) and largest file.
        migrator.registerMigration("v16-shared-tier") { db in
            try db.execute(sql: """
                ALTER TABLE pool ADD COLUMN shared TEXT NOT NULL DEFAULT '';
                ALTER TABLE pool ADD COLUMN shared_max_file_size INTEGER NOT NULL DEFAULT \(PoolSettings.defaultSharedMaxFileSize);
                """)
        }
        // Read times appended between folds (see ``AccessLogRow``), one row per append.
        migrator.registerMigration("v17-access-log") { db in
            try db.execute(sql: "CREATE TABLE access_log(seq INTEGER PRIMARY KEY, times BLOB NOT NULL)")
        }
        return migrator
    }
}
