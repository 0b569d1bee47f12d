import CacheModel
import GRDB

/// Per-pool usage as rows of the index's `usage` table, one per pool and persistence, kept by
/// triggers on `entry` (see ``Schema``): every transaction that adds, removes, resizes or
/// reflags a named file moves its pool's row too, the index writer's group commits and
/// recovery's deletions alike. So the rows always equal the sum of the committed entries, also
/// after `kill -9` or a power loss, and a mount reads O(pools) rows instead of every entry.
enum UsageTotals {
    /// Which entry rows count: named files (a nameless file's bytes are `pending_usage`).
    static func counts(_ row: String) -> String {
        "(\(row).kind = \(EntryKind.file.rawValue) AND \(row).parent IS NOT NULL)"
    }

    static func addSQL(_ row: String, when condition: String = "1") -> String {
        """
        INSERT INTO usage(pool, persistent, files, bytes) SELECT \(row).pool, \(row).persistent, 1, \(row).size
            WHERE \(condition)
            ON CONFLICT(pool, persistent) DO UPDATE SET files = files + 1, bytes = bytes + excluded.bytes;
        """
    }

    static func subtractSQL(_ row: String, when condition: String = "1") -> String {
        """
        UPDATE usage SET files = files - 1, bytes = bytes - \(row).size
            WHERE \(condition) AND pool = \(row).pool AND persistent = \(row).persistent;
        """
    }

    /// Sets the rows to the sum of the entries (the migration, and `verify --repair`).
    static let recomputeSQL = """
        DELETE FROM usage;
        INSERT INTO usage(pool, persistent, files, bytes)
            SELECT pool, persistent, COUNT(*), COALESCE(SUM(size), 0) FROM entry
            WHERE kind = \(EntryKind.file.rawValue) AND parent IS NOT NULL GROUP BY pool, persistent;
        """

    /// "pool:cachedBytes,cachedFiles,persistentBytes,persistentFiles;…", for reports.
    static func describe(_ usage: [EntryID: PoolUsage]) -> String {
        usage.sorted { $0.key < $1.key }.map { pool, figures in
            "\(pool):\(figures.cachedBytes),\(figures.cachedFiles),\(figures.persistentBytes),\(figures.persistentFiles)"
        }.joined(separator: ";")
    }
}

extension IndexDatabase {
    /// The usage rows: what a mount starts its ``UsageLedger`` from.
    public func usageTotals() throws -> [EntryID: PoolUsage] {
        try pool.read { db in
            var usage: [EntryID: PoolUsage] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT pool, persistent, files, bytes FROM usage") {
                let files: Int64 = row[2]
                let bytes: Int64 = row[3]
                guard files != 0 || bytes != 0 else { continue }
                if row[1] as Bool {
                    usage[row[0], default: PoolUsage()].persistentFiles = files
                    usage[row[0], default: PoolUsage()].persistentBytes = bytes
                } else {
                    usage[row[0], default: PoolUsage()].cachedFiles = files
                    usage[row[0], default: PoolUsage()].cachedBytes = bytes
                }
            }
            return usage
        }
    }

    /// Sets the usage rows to the sum of the entries.
    func recomputeUsageTotals() throws {
        try pool.write { db in try db.execute(sql: UsageTotals.recomputeSQL) }
    }
}
