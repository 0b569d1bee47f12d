import CacheModel
import Foundation
import GRDB

/// Eviction units (`user.cache.unit` on a directory): the roots are rows of the xattr
/// table under that name, so a root's mark goes with its directory; what a unit holds is
/// read from the committed entries when a pass needs it, never kept twice.
extension IndexDatabase {
    static let unitAttributeName = Data(CacheAttribute.unit.fullName.utf8)

    /// Every directory marked as a unit root.
    public func unitRoots() throws -> Set<EntryID> {
        try pool.read { db in
            Set(try EntryID.fetchAll(db, sql: "SELECT entry FROM xattr WHERE name = ?",
                                     arguments: [Self.unitAttributeName]))
        }
    }

    /// The pool of each of these directories that is still named (roots removed since are left out).
    public func pools(ofDirectories ids: Set<EntryID>) throws -> [EntryID: EntryID] {
        guard !ids.isEmpty else { return [:] }
        let list = ids.map(String.init).joined(separator: ",")
        return try pool.read { db in
            var pools: [EntryID: EntryID] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT id, pool FROM entry WHERE id IN (\(list)) AND kind = \(EntryKind.directory.rawValue)
                AND parent IS NOT NULL
                """) {
                pools[row[0]] = row[1]
            }
            return pools
        }
    }

    /// The root's row, the directories beneath it (itself included) and the named files in
    /// them, as committed: persistent, pinned and half-written files too, since they decide
    /// whether the unit may go. Nil when the root is gone.
    public func unitContents(root: EntryID) throws
        -> (root: EntryRecord, directories: Set<EntryID>, files: [EntryRecord])?
    {
        try pool.read { db -> (root: EntryRecord, directories: Set<EntryID>, files: [EntryRecord])? in
            guard let rootRow = try EntryRecord.fetchOne(db, sql: "SELECT * FROM entry WHERE id = ?", arguments: [root]),
                  rootRow.parent != nil else { return nil }
            let tree = """
                WITH RECURSIVE tree(id) AS (
                    SELECT ? UNION ALL
                    SELECT entry.id FROM entry JOIN tree ON entry.parent = tree.id
                    WHERE entry.kind = \(EntryKind.directory.rawValue)
                )
                """
            let directories = Set(try EntryID.fetchAll(db, sql: tree + " SELECT id FROM tree", arguments: [root]))
            let files = try EntryRecord.fetchAll(db, sql: tree + """
                 SELECT entry.* FROM entry JOIN tree ON entry.parent = tree.id
                WHERE entry.kind = \(EntryKind.file.rawValue) ORDER BY entry.id
                """, arguments: [root])
            return (rootRow, directories, files)
        }.map { (try plain($0.root), $0.directories, try plain($0.files)) }
    }
}
