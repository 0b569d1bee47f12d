import Foundation
import GRDB

/// One change to the index, made in memory first by a request thread and committed later,
/// in order, by the ``IndexWriter``. Applying changes in the order memory made them keeps
/// every constraint of the schema (a name is taken only after its last owner let it go).
enum IndexChange: Sendable {
    /// A new entry with an id the namespace handed out.
    case insert(EntryRecord)
    /// Every column of an existing entry.
    case update(EntryRecord)
    /// What writing or reading a file changes: size, allocation, times, the writing and durable flags.
    case content(EntryRecord)
    /// The entry's name is gone; its row stays, nameless, until its bytes are unlinked.
    case detach(EntryID, ctime: Int64)
    case delete(EntryID)
    /// One more name of an entry (a hard link).
    case insertLink(LinkName, entry: EntryID)
    case deleteLink(LinkName)
    /// Every hard link of an entry (its record name goes with `detach`).
    case deleteLinks(EntryID)
    case accessTimes([EntryID: Int64])
    /// A closed file synced to the disk, unless it changed since it was chosen.
    case markDurable(EntryID, mtime: Int64)
    /// A setting (boot id, counters, id reservations) that must commit in order with entries.
    case setting(key: String, value: String)

    private static let insertSQL = """
        INSERT INTO entry(\(EntryRecord.columnsAfterID.joined(separator: ", ")), id) \
        VALUES (\(Array(repeating: "?", count: EntryRecord.columnsAfterID.count + 1).joined(separator: ", ")))
        """
    private static let updateSQL = """
        UPDATE entry SET \(EntryRecord.columnsAfterID.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?
        """

    /// Writes the change; `index` seals what an encrypted store keeps sealed.
    func apply(in db: Database, of index: IndexStore) throws {
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
            let statement = try db.cachedStatement(sql: "UPDATE entry SET last_access = ? WHERE id = ?")
            for (id, time) in times { try statement.execute(arguments: [time, id]) }
        case .markDurable(let id, let mtime):
            try db.cachedStatement(sql: "UPDATE entry SET durable = 1 WHERE id = ? AND mtime = ? AND writing = 0")
                .execute(arguments: [id, mtime])
        case .setting(let key, let value):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO setting(key, value) VALUES (?, ?)")
                .execute(arguments: [key, value])
        }
    }
}
