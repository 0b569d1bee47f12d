import CacheModel
import Foundation

/// `user.cache.unit` on a directory: everything beneath it, now and later, is evicted
/// together (see ``Evictor`` and `EvictionUnit`). The mark is committed first, then known
/// in memory; removing it splits the unit back into files.
extension Attributes {
    func setUnit(_ id: EntryID, text: String) throws {
        guard let isUnit = ValueParsing.flag(text) else {
            throw CacheError.invalidXattrValue(name: CacheAttribute.unit.fullName, reason: "expected 0 or 1")
        }
        let name = IndexDatabase.unitAttributeName
        try writer.perform { db in
            if isUnit {
                // Nothing is written for a directory removed meanwhile.
                try db.execute(sql: """
                    INSERT OR REPLACE INTO xattr(entry, name, value)
                    SELECT ?, ?, ? WHERE EXISTS(SELECT 1 FROM entry WHERE id = ? AND parent IS NOT NULL)
                    """, arguments: [id, name, Data("1".utf8), id])
                if db.changesCount == 0 { throw CacheError.notFound }
            } else {
                try db.execute(sql: "DELETE FROM xattr WHERE entry = ? AND name = ?", arguments: [id, name])
            }
        }
        names.setUnitRoot(id, isRoot: isUnit)
        try touchChangeTime(id)
        let record = try names.record(id)
        // Files open for writing beneath it now see the unit's limit (or lose it).
        refreshWriteLimits(beneath: id, in: record.pool)
        evictor.requestEnforcement(of: [record.pool])
    }

    private func refreshWriteLimits(beneath directory: EntryID, in pool: EntryID) {
        let open = files.handles.entriesOpenForWriting(in: pool)
        guard !open.isEmpty else { return }
        let beneath: [EntryRecord]
        do {
            beneath = try names.subtree(of: directory)
        } catch {
            logger.error("could not read the files beneath unit \(directory) to update their write limits: \(error)")
            return
        }
        for record in beneath where record.kind == .file && open.contains(record.entryID) {
            files.handles.updateLimit(for: record.entryID, names.writeLimit(for: record))
        }
    }

    /// `user.cache.unit`, `unit_files` and `unit_usage` of a directory: the figures of
    /// everything beneath a unit's root (0 for a directory that is not one).
    func unitValue(_ attribute: CacheAttribute, of directory: EntryRecord) throws -> String {
        let isRoot = names.isUnitRoot(directory.entryID)
        switch attribute {
        case .unit: return isRoot ? "1" : "0"
        case .unitFiles, .unitUsage:
            guard isRoot else { return "0" }
            let files = try names.filesBeneath(directory.entryID)
            return String(attribute == .unitFiles ? Int64(files.count)
                          : files.reduce(0) { $0 + ($1.persistent ? 0 : $1.size) })
        default: throw CacheError.noAttribute
        }
    }
}
