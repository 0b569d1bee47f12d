import CacheModel
import Foundation
import GRDB

/// Hard links (the `link` table) and link counts.
extension IndexDatabase {
    /// The hard links in a directory with their entries, to load it into memory.
    package func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)] {
        try pool.unsafeRead { db in
            // The entry's columns come first, where `EntryRecord(row:)` reads them; the link's name last.
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT entry.*, link.name FROM link JOIN entry ON entry.id = link.entry WHERE link.parent = ?
                """), arguments: [parent])
        }.compactMap { row in
            guard let record = listable(EntryRecord(row: row)),
                  let name = listable(name: row[row.count - 1], in: parent, of: record.entryID) else { return nil }
            return (name, record)
        }
    }

    /// The hard links of an entry (its names beyond the record's own).
    package func links(of entry: EntryID) throws -> [LinkName] {
        try pool.unsafeRead { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT parent, name FROM link WHERE entry = ?"),
                             arguments: [entry])
        }.map { LinkName(parent: $0[0], name: try plainName($0[1], in: $0[0])) }
    }

    /// Entries whose stored link count is not what their names say: a file's names (its
    /// own and its links), or 2 + a directory's subdirectories. (For `cachefs verify`.)
    public func linkCountMismatches() throws -> [(record: EntryRecord, actual: UInt32)] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT entry.*, CASE WHEN kind = 1
                    THEN 2 + (SELECT COUNT(*) FROM entry AS child WHERE child.parent = entry.id AND child.kind = 1)
                    ELSE 1 + (SELECT COUNT(*) FROM link WHERE link.entry = entry.id) END AS actual
                FROM entry WHERE parent IS NOT NULL AND nlink != actual
                """)
        }.map { row in (try plain(EntryRecord(row: row)), row[row.count - 1]) }
    }
}
