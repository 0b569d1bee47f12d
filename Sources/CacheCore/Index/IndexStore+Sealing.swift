import Foundation

/// Every row goes through these on its way in and out, so the rest of cachefs sees plain
/// names whether or not the store is encrypted (see ``IndexSealing``).
extension IndexStore {
    func stored(_ record: EntryRecord) throws -> EntryRecord {
        guard let sealing else { return record }
        return try sealing.stored(record)
    }

    func plain(_ record: EntryRecord) throws -> EntryRecord {
        guard let sealing else { return record }
        return try sealing.plain(record)
    }

    func plain(_ records: [EntryRecord]) throws -> [EntryRecord] {
        guard let sealing else { return records }
        return try records.map(sealing.plain)
    }

    func storedName(_ name: Data, in parent: EntryID?) throws -> Data {
        guard let sealing else { return name }
        return try sealing.storedName(name, in: parent)
    }

    func plainName(_ stored: Data, in parent: EntryID?) throws -> Data {
        guard let sealing else { return stored }
        return try sealing.plainName(stored, in: parent)
    }

    /// A directory's row as a listing shows it; nil for a sealed row that does not open,
    /// reported once, so the rest of its directory stays usable.
    func listable(_ record: EntryRecord) throws -> EntryRecord? {
        guard let sealing else { return record }
        return try reportingDamage(of: record.entryID) { try sealing.plain(record) }
    }

    /// A hard link's name, as ``listable(_:)``.
    func listable(name stored: Data, in parent: EntryID, of entry: EntryID) throws -> Data? {
        guard let sealing else { return stored }
        return try reportingDamage(of: entry) { try sealing.plainName(stored, in: parent) }
    }

    private func reportingDamage<T>(of entry: EntryID, _ open: () throws -> T) throws -> T? {
        do {
            return try open()
        } catch CacheError.io(EIO) {
            sealing?.alarm?.report(owner: entry, "its sealed name or target in the index does not open")
            return nil
        }
    }
}
