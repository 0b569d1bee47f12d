import CacheModel
import Foundation
import GRDB

/// Victim queries of the evictor. Each repeats `Schema.evictable` so SQLite uses the partial
/// indexes, which makes choosing the next victim O(log n).
extension IndexDatabase {
    /// The least recently used evictable files of a pool.
    public func leastRecentlyUsed(pool poolID: EntryID, limit: Int, offset: Int = 0) throws -> [EntryRecord] {
        try plain(pool.read { db in
            try EntryRecord.fetchAll(db, sql: """
                SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) ORDER BY last_access LIMIT ? OFFSET ?
                """, arguments: [poolID, limit, offset])
        })
    }

    /// A pool's evictable files in LRU order (ties by id, as the `entry_lru` index orders
    /// them), handed to `body` in batches, until it answers false. Each batch is a read of
    /// its own, so a row whose last read moved while the walk went on can come twice.
    public func forEachLeastRecentlyUsed(pool poolID: EntryID, batch: Int,
                                         _ body: ([EntryRecord]) throws -> Bool) throws {
        // A page per read, resumed after the last row by (last_access, id): `body` takes
        // other locks (the namespace's), and none may be taken inside an open read.
        var after: (lastAccess: Int64, id: EntryID)?
        while true {
            let page = try plain(pool.read { db in
                if let after {
                    return try EntryRecord.fetchAll(db, sql: """
                        SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) AND (last_access, id) > (?, ?)
                        ORDER BY last_access, id LIMIT ?
                        """, arguments: [poolID, after.lastAccess, after.id, batch])
                }
                return try EntryRecord.fetchAll(db, sql: """
                    SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) ORDER BY last_access, id LIMIT ?
                    """, arguments: [poolID, batch])
            })
            guard let last = page.last, try body(page), page.count == batch else { return }
            after = (last.lastAccess, last.entryID)
        }
    }

    /// Evictable files of a pool using the pool's max age whose basis time is before `cutoff`.
    public func olderThan(pool poolID: EntryID, cutoff: Int64, basis: AgeBasis, limit: Int,
                          offset: Int = 0) throws -> [EntryRecord] {
        let column = basis == .access ? "last_access" : "mtime"
        return try plain(pool.read { db in
            try EntryRecord.fetchAll(db, sql: """
                SELECT * FROM entry WHERE pool = ? AND \(Schema.evictable) AND \(column) < ? AND expiration = 0
                ORDER BY \(column) LIMIT ? OFFSET ?
                """, arguments: [poolID, cutoff, limit, offset])
        })
    }

    /// Files whose pin lease has ended but still carry it, so they are not yet evictable.
    public func endedLeases(before time: Int64) throws -> [EntryID] {
        // Asked every round of the evictor: a cached statement, one read.
        try pool.unsafeRead { db in
            try EntryID.fetchAll(db.cachedStatement(sql: "SELECT id FROM entry WHERE pinned_until > 0 AND pinned_until <= ?"),
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

/// What a replacement policy is rebuilt from at mount (or when a pool changes policy).
extension IndexDatabase {
    /// A cached file as a policy knows it: its id, and the directory and name its fingerprint
    /// is made of.
    public struct ResidentRow: Sendable {
        public var id: EntryID
        public var parent: EntryID
        public var name: Data
        public var size: Int64
        /// Its own miss cost in milliseconds (0 = unknown).
        public var costMilliseconds: Int64
    }

    /// Every cached (named, not persistent) file of a pool, least recently used first:
    /// pinned files and files being written included, as a policy holds them too.
    public func cachedFilesByAccess(pool poolID: EntryID) throws -> [ResidentRow] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, parent, name, size, cost_ms FROM entry
                WHERE pool = ? AND kind = 2 AND persistent = 0 AND parent IS NOT NULL
                ORDER BY last_access, id
                """, arguments: [poolID])
        }.map { row in
            ResidentRow(id: row["id"], parent: row["parent"], name: try plainName(row["name"], in: row["parent"]),
                        size: row["size"], costMilliseconds: row["cost_ms"])
        }
    }
}
