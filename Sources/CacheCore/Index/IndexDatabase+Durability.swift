import CacheModel
import Foundation
import GRDB

/// Which closed files are known to be on the disk (see Recovery after a power loss).
extension IndexDatabase {
    /// Closed files whose bytes may not have reached the disk yet, with their mtime.
    public func notYetDurable(limit: Int) throws -> [(id: EntryID, mtime: Int64)] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, mtime FROM entry WHERE durable = 0 AND kind = 2 AND writing = 0 AND parent IS NOT NULL
                LIMIT ?
                """, arguments: [limit]).map { (id: $0[0], mtime: $0[1]) }
        }
    }

    /// After a clean shutdown (everything synced), every closed file is durable.
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
