import Foundation
import GRDB

/// Ordinary `user.*` extended attributes, stored per entry.
extension IndexStore {
    public func xattr(_ id: EntryID, name: Data) throws -> Data? {
        try pool.unsafeRead { db in
            try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM xattr WHERE entry = ? AND name = ?"),
                              arguments: [id, name])
        }
    }

    public func xattrNames(_ id: EntryID) throws -> [Data] {
        try pool.read { db in
            try Data.fetchAll(db, sql: "SELECT name FROM xattr WHERE entry = ? ORDER BY name", arguments: [id])
        }
    }

    static func setXattr(_ id: EntryID, name: Data, value: Data, mustExist: Bool, mustNotExist: Bool,
                         in db: Database) throws {
        let exists = try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM xattr WHERE entry = ? AND name = ?)",
                                       arguments: [id, name]) ?? false
        if mustExist && !exists { throw CacheError.noAttribute }
        if mustNotExist && exists { throw CacheError.attributeExists }
        try db.execute(sql: "INSERT OR REPLACE INTO xattr(entry, name, value) VALUES (?, ?, ?)",
                       arguments: [id, name, value])
    }

    /// The version of the origin's file a fetched file holds (`user.cache.etag`,
    /// `user.cache.last_modified`), kept in the xattr table under those names, so it goes with
    /// the entry. Nothing is written for an entry removed meanwhile.
    static func setOriginVersion(_ id: EntryID, etag: String?, lastModified: String?, in db: Database) throws {
        for (attribute, value) in [(CacheAttribute.etag, etag), (.lastModified, lastModified)] {
            guard let value else { continue }
            try db.execute(sql: """
                INSERT OR REPLACE INTO xattr(entry, name, value)
                SELECT ?, ?, ? WHERE EXISTS(SELECT 1 FROM entry WHERE id = ?)
                """, arguments: [id, Data(attribute.fullName.utf8), Data(value.utf8), id])
        }
    }

    static func removeXattr(_ id: EntryID, name: Data, in db: Database) throws {
        try db.execute(sql: "DELETE FROM xattr WHERE entry = ? AND name = ?", arguments: [id, name])
        if db.changesCount == 0 { throw CacheError.noAttribute }
    }
}
