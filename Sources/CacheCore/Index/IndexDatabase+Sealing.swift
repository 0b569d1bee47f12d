import CacheModel
import Dispatch
import Foundation
import Synchronization

/// Every row goes through these on its way in and out, so the rest of cachefs sees plain
/// names whether or not the store is encrypted (see ``IndexSealing``).
extension IndexDatabase {
    func stored(_ record: EntryRecord) throws -> EntryRecord {
        guard let sealing else { return record }
        return try sealing.stored(record)
    }

    func plain(_ record: EntryRecord) throws -> EntryRecord {
        guard let sealing else { return record }
        return try sealing.plain(record)
    }

    /// A row found by its name: only its target (if any) is opened, the name is `name`.
    func plain(_ record: EntryRecord, named name: Data) throws -> EntryRecord {
        guard let sealing else { return record }
        var found = record
        found.name = name
        return try sealing.plainTarget(of: found)
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
    func listable(_ record: EntryRecord) -> EntryRecord? {
        guard let sealing else { return record }
        return reportingDamage(of: record.entryID) { try sealing.plain(record) }
    }

    /// A hard link's name, as ``listable(_:)``.
    func listable(name stored: Data, in parent: EntryID, of entry: EntryID) -> Data? {
        guard let sealing else { return stored }
        return reportingDamage(of: entry) { try sealing.plainName(stored, in: parent) }
    }

    /// Opening a sealed field fails only as damage (EIO).
    private func reportingDamage<T>(of entry: EntryID, _ open: () throws -> T) -> T? {
        do {
            return try open()
        } catch {
            sealing?.alarm?.report(owner: entry, "its sealed name or target in the index does not open")
            return nil
        }
    }

    /// ``listable(_:)`` of each record, in order, run in one slice per core when there are
    /// enough to be worth it.
    func listableInParallel(_ records: [EntryRecord]) -> [EntryRecord?] {
        let slices = records.count < Tunables.rowsWorthSlicing ? 1 : max(ProcessInfo.processInfo.activeProcessorCount, 1)
        let length = (records.count + slices - 1) / slices
        let opened = Mutex<[Int: [EntryRecord?]]>([:])
        DispatchQueue.concurrentPerform(iterations: slices) { slice in
            let range = min(slice * length, records.count)..<min((slice + 1) * length, records.count)
            let part = records[range].map(listable)
            opened.withLock { $0[slice] = part }
        }
        let parts = opened.withLock { $0 }
        return (0..<slices).flatMap { parts[$0] ?? [] }
    }
}
