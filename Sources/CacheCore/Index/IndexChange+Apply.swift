import CacheModel
import Foundation
import GRDB

/// How the writer commits an ``IndexChange``.
extension IndexChange {
    private static let insertSQL = """
        INSERT INTO entry(\(EntryRecord.columnsAfterID.joined(separator: ", ")), id) \
        VALUES (\(Array(repeating: "?", count: EntryRecord.columnsAfterID.count + 1).joined(separator: ", ")))
        """
    private static let updateSQL = """
        UPDATE entry SET \(EntryRecord.columnsAfterID.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?
        """

    /// Writes the change; `index` seals what an encrypted store keeps sealed.
    func apply(in db: Database, of index: IndexDatabase) throws {
        switch self {
        case .insert(let record):
            try db.cachedStatement(sql: Self.insertSQL).execute(arguments: index.stored(record).columnValues)
        case .update(let record):
            try db.cachedStatement(sql: Self.updateSQL).execute(arguments: index.stored(record).columnValues)
        case .content(let record):
            try db.cachedStatement(sql: """
                UPDATE entry SET size = ?, blocks = ?, mtime = ?, ctime = ?, atime = ?, writing = ?, durable = ?
                WHERE id = ?
                """).execute(arguments: [record.size, record.blocks, record.mtime, record.ctime, record.atime,
                                         record.writing, record.durable, record.id])
        case .detach(let id, let ctime):
            try db.cachedStatement(sql: "UPDATE entry SET parent = NULL, ctime = ? WHERE id = ?")
                .execute(arguments: [ctime, id])
        case .delete(let id):
            try db.cachedStatement(sql: "DELETE FROM entry WHERE id = ?").execute(arguments: [id])
        case .insertLink(let link, let entry):
            try db.cachedStatement(sql: "INSERT INTO link(parent, name, entry) VALUES (?, ?, ?)")
                .execute(arguments: [link.parent, index.storedName(link.name, in: link.parent), entry])
        case .deleteLink(let link):
            try db.cachedStatement(sql: "DELETE FROM link WHERE parent = ? AND name = ?")
                .execute(arguments: [link.parent, index.storedName(link.name, in: link.parent)])
        case .deleteLinks(let id):
            try db.cachedStatement(sql: "DELETE FROM link WHERE entry = ?").execute(arguments: [id])
        case .accessTimes(let times):
            // In id order: neighbouring rows share pages. Never back in time, as in memory: a row
            // an `.update` gave a newer time (a fetch, a file made cached again) keeps it.
            let statement = try db.cachedStatement(sql: AccessLogRow.foldSQL)
            for (id, time) in times.sorted(by: { $0.key < $1.key }) { try statement.execute(arguments: [time, id, time]) }
        case .accessLogFolded:
            try db.cachedStatement(sql: "DELETE FROM access_log").execute()
        case .accessLog(let times):
            try db.cachedStatement(sql: "INSERT INTO access_log(times) VALUES (?)")
                .execute(arguments: [AccessLogRow.encode(times)])
        case .markDurable(let id, let mtime):
            try db.cachedStatement(sql: "UPDATE entry SET durable = 1 WHERE id = ? AND mtime = ? AND writing = 0")
                .execute(arguments: [id, mtime])
        case .setting(let key, let value):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO setting(key, value) VALUES (?, ?)")
                .execute(arguments: [key, value])
        }
    }
}
