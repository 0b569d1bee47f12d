import CacheModel
import GRDB

/// When age policy removes files next, and which are due. Each query repeats the condition
/// of a partial index (`Schema.evictable`, and the expression indexes of per-file
/// expirations), so finding the next expiry costs O(log n), never a scan.
extension IndexDatabase {
    /// The soonest time, in nanoseconds, at which one of the pool's files expires by the
    /// committed index: the oldest basis time under the pool's `maxAge` (seconds, 0 for
    /// never), or the soonest per-file expiration. Nil when nothing in the pool can expire.
    public func earliestExpiry(pool poolID: EntryID, maxAge: Int64, basis: AgeBasis) throws -> Int64? {
        let column = Self.basisColumn(basis)
        let due = Self.ownDue(basis)
        // Asked every round of the evictor for every pool: cached statements, no transaction
        // (two single reads; a commit between them moves the answer no more than it would later).
        return try pool.unsafeRead { db in
            var soonest: Int64?
            if maxAge > 0, let oldest = try Int64.fetchOne(db.cachedStatement(sql: """
                SELECT \(column) FROM entry WHERE pool = ? AND \(Schema.evictable) AND expiration = 0
                ORDER BY \(column) LIMIT 1
                """), arguments: [poolID]) {
                soonest = oldest + maxAge * 1_000_000_000
            }
            if let own = try Int64.fetchOne(db.cachedStatement(sql: """
                SELECT \(due) FROM entry WHERE pool = ? AND expiration > 0 AND \(Schema.evictable)
                ORDER BY \(due) LIMIT 1
                """), arguments: [poolID]) {
                soonest = min(soonest ?? own, own)
            }
            return soonest
        }
    }

    /// Files of a pool whose own expiration has passed at `time` by the committed index,
    /// soonest first.
    public func ownExpirationDue(pool poolID: EntryID, at time: Int64, basis: AgeBasis, limit: Int,
                                 offset: Int = 0) throws
        -> [EntryRecord]
    {
        let due = Self.ownDue(basis)
        return try plain(pool.read { db in
            try EntryRecord.fetchAll(db, sql: """
                SELECT * FROM entry WHERE pool = ? AND expiration > 0 AND \(Schema.evictable) AND \(due) <= ?
                ORDER BY \(due) LIMIT ? OFFSET ?
                """, arguments: [poolID, time, limit, offset])
        })
    }

    private static func basisColumn(_ basis: AgeBasis) -> String {
        basis == .access ? "last_access" : "mtime"
    }

    /// The expression of a per-file expiry, exactly as the expression indexes spell it.
    private static func ownDue(_ basis: AgeBasis) -> String {
        basis == .access ? Schema.ownExpiryByAccess : Schema.ownExpiryByModification
    }
}
