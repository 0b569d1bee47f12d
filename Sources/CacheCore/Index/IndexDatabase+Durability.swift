import CacheModel
import Foundation
import GRDB

/// Which closed files are known to be on the disk (see Recovery after a power loss).
extension IndexDatabase {
    /// The durability thread's query, every 2 s. It names `entry_not_durable`: without table
    /// statistics the planner took `entry_by_name` for `parent IS NOT NULL` and walked every
    /// named row of the store each time (300 ms of CPU at 1,000,000 files, idle).
    static let notYetDurableQuery = """
        SELECT id, mtime FROM entry INDEXED BY entry_not_durable
        WHERE durable = 0 AND kind = 2 AND writing = 0 AND parent IS NOT NULL LIMIT ?
        """

    /// Closed files whose bytes may not have reached the disk yet, with their mtime.
    public func notYetDurable(limit: Int) throws -> [(id: EntryID, mtime: Int64)] {
        // Asked every sync interval, mostly of an index with nothing to sync: a cached statement, one read.
        try pool.unsafeRead { db in
            try Row.fetchAll(db.cachedStatement(sql: Self.notYetDurableQuery), arguments: [limit]).map { (id: $0[0], mtime: $0[1]) }
        }
    }

    /// After a clean shutdown (everything synced), every closed file is durable. (SQLite reads
    /// no partial index in an UPDATE of a column its WHERE names, so this walks the rows, once
    /// per unmount.)
    public func markAllClosedFilesDurable() throws {
        try write { db in try db.execute(sql: "UPDATE entry SET durable = 1 WHERE kind = 2 AND writing = 0 AND durable = 0") }
    }

    /// Files not known durable, for recovery after a power loss.
    public func nonDurableFiles() throws -> [EntryRecord] {
        try plain(pool.read { db in
            try EntryRecord.fetchAll(db, sql: "SELECT * FROM entry WHERE kind = 2 AND durable = 0")
        })
    }
}
