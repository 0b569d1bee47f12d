import Foundation
import GRDB

/// Victim queries of the evictor. Each repeats `Schema.evictable` so SQLite uses the partial
/// indexes, which makes choosing the next victim O(log n).
extension IndexStore {
    /// The least recently used evictable files of a pool, or of every pool when nil.
    public func leastRecentlyUsed(pool poolID: EntryID?, limit: Int, offset: Int = 0) throws -> [EntryRecord] {
        try pool.read { db in
            if let poolID {
                return try EntryRecord.fetchAll(db, sql: """
                    SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) ORDER BY last_access LIMIT ? OFFSET ?
                    """, arguments: [poolID, limit, offset])
            }
            return try EntryRecord.fetchAll(db, sql: """
                SELECT * FROM entry WHERE \(Schema.evictable) ORDER BY last_access LIMIT ?
                """, arguments: [limit])
        }
    }

    /// Evictable files of a pool using the pool's max age whose basis time is before `cutoff`.
    public func olderThan(pool poolID: EntryID, cutoff: Int64, basis: AgeBasis, limit: Int) throws -> [EntryRecord] {
        let column = basis == .access ? "last_access" : "mtime"
        return try pool.read { db in
            try EntryRecord.fetchAll(db, sql: """
                SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) AND \(column) < ? AND expiration = 0
                ORDER BY \(column) LIMIT ?
                """, arguments: [poolID, cutoff, limit])
        }
    }

    /// Files whose pin lease has ended but still carry it, so they are not yet evictable.
    public func endedLeases(before time: Int64) throws -> [EntryID] {
        try pool.read { db in
            try EntryID.fetchAll(db, sql: "SELECT id FROM entry WHERE pinned_until > 0 AND pinned_until <= ?",
                                 arguments: [time])
        }
    }

    /// Pinned files of a pool now (forever, or a lease not yet ended).
    public func pinnedCount(pool poolID: EntryID, now: Int64) throws -> Int64 {
        try pool.read { db in
            try Int64.fetchOne(db, sql: """
                SELECT COUNT(*) FROM entry WHERE pool = ? AND pinned_until != 0 AND kind = 2
                AND (pinned_until < 0 OR pinned_until > ?) AND parent IS NOT NULL
                """, arguments: [poolID, now]) ?? 0
        }
    }

}
