import CacheModel
import Foundation
import GRDB

/// Ordinary `user.*` extended attributes, stored per entry (sealed in an encrypted store).
extension IndexDatabase {
    public func xattr(_ id: EntryID, name: Data) throws -> Data? {
        let storedName = try storedXattrName(name, of: id)
        return try pool.unsafeRead { db in
            try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM xattr WHERE entry = ? AND name = ?"),
                              arguments: [id, storedName])
        }.map { stored in try sealing?.plainXattrValue(stored, named: name, of: id) ?? stored }
    }

    /// The entry's attribute names, in byte order.
    public func xattrNames(_ id: EntryID) throws -> [Data] {
        let stored = try pool.read { db in
            try Data.fetchAll(db, sql: "SELECT name FROM xattr WHERE entry = ?", arguments: [id])
        }
        guard let sealing else { return stored.sorted { $0.lexicographicallyPrecedes($1) } }
        return try stored.map { try sealing.plainXattrName($0, of: id) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    func setXattr(_ id: EntryID, name: Data, value: Data, mustExist: Bool, mustNotExist: Bool,
                  in db: Database) throws {
        let storedName = try storedXattrName(name, of: id)
        let exists = try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM xattr WHERE entry = ? AND name = ?)",
                                       arguments: [id, storedName]) ?? false
        if mustExist && !exists { throw CacheError.noAttribute }
        if mustNotExist && exists { throw CacheError.attributeExists }
        try db.execute(sql: "INSERT OR REPLACE INTO xattr(entry, name, value) VALUES (?, ?, ?)",
                       arguments: [id, storedName, storedXattrValue(value, named: name, of: id)])
    }

    /// The version of the origin's file a fetched file holds (`user.cache.etag`,
    /// `user.cache.last_modified`), kept in the xattr table under those names, so it goes with
    /// the entry. Nothing is written for an entry removed meanwhile.
    func setOriginVersion(_ id: EntryID, etag: String?, lastModified: String?, in db: Database) throws {
        for (attribute, value) in [(CacheAttribute.etag, etag), (.lastModified, lastModified)] {
            guard let value else { continue }
            let name = Data(attribute.fullName.utf8)
            try db.execute(sql: """
                INSERT OR REPLACE INTO xattr(entry, name, value)
                SELECT ?, ?, ? WHERE EXISTS(SELECT 1 FROM entry WHERE id = ?)
                """, arguments: [id, storedXattrName(name, of: id), storedXattrValue(Data(value.utf8), named: name, of: id),
                                 id])
        }
    }

    func removeXattr(_ id: EntryID, name: Data, in db: Database) throws {
        try db.execute(sql: "DELETE FROM xattr WHERE entry = ? AND name = ?",
                       arguments: [id, storedXattrName(name, of: id)])
        if db.changesCount == 0 { throw CacheError.noAttribute }
    }

    private func storedXattrName(_ name: Data, of id: EntryID) throws -> Data {
        try sealing?.storedXattrName(name, of: id) ?? name
    }

    private func storedXattrValue(_ value: Data, named name: Data, of id: EntryID) throws -> Data {
        try sealing?.storedXattrValue(value, named: name, of: id) ?? value
    }
}
