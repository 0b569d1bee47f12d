import CacheModel
import Foundation
import GRDB

/// One row of the index's access log: read times not folded into the entries' `last_access`
/// yet, as (id, time) pairs of little-endian 64-bit integers. A mount folds what a crash
/// left there (``IndexDatabase/foldAccessLog()``), never an older time over a newer one.
enum AccessLogRow {
    /// Writes one read time into its row, never back in time (bound: time, id, time).
    static let foldSQL = "UPDATE entry SET last_access = ? WHERE id = ? AND last_access < ?"

    static func encode(_ times: [EntryID: Int64]) -> Data {
        var words: [Int64] = []
        words.reserveCapacity(times.count * 2)
        for (id, time) in times {
            words.append(id.littleEndian)
            words.append(time.littleEndian)
        }
        return words.withUnsafeBytes { Data($0) }
    }

    /// The pairs of a row (whole pairs only: a blob of any other length is not one this daemon wrote).
    static func decode(_ data: Data) -> [(id: EntryID, time: Int64)] {
        data.withUnsafeBytes { bytes in
            stride(from: 0, to: bytes.count - 15, by: 16).map { offset in
                (EntryID(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: EntryID.self)),
                 Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self)))
            }
        }
    }
}

extension IndexDatabase {
    /// Writes the access log's times into the entries (each only where it is newer) and
    /// empties the log: at open, what the last mount appended after its last fold (all of
    /// it after a crash). Returns how many times it read.
    @discardableResult
    func foldAccessLog() throws -> Int {
        // The common case (the last mount ended cleanly) takes no write transaction.
        guard try pool.read({ db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM access_log)") ?? false })
        else { return 0 }
        return try write { db in
            let rows = try Data.fetchAll(db, sql: "SELECT times FROM access_log ORDER BY seq")
            guard !rows.isEmpty else { return 0 }
            let statement = try db.makeStatement(sql: AccessLogRow.foldSQL)
            var count = 0
            for row in rows {
                for (id, time) in AccessLogRow.decode(row) {
                    try statement.execute(arguments: [time, id, time])
                    count += 1
                }
            }
            try db.execute(sql: "DELETE FROM access_log")
            return count
        }
    }
}
