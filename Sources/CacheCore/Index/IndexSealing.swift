import CacheModel
import Foundation

/// What an encrypted store's index keeps sealed, and how: entry and hard-link names
/// (deterministic, scoped by their directory, so a lookup stays an equality match), symlink
/// targets, user xattr names and values, and pool settings (randomized).
///
/// Readable on purpose: pool directories' names (children of the root), which are the
/// store's configuration (the `--pool` arguments, unit files, metrics and trace file names),
/// and the names of cachefs's own `user.cache.*` attributes kept in the xattr table (a
/// unit's mark, an origin's version), which the evictor finds by name. A row that does not
/// open (changed, or moved to another directory or entry) answers EIO, or is left out of its
/// directory's listing and reported to `alarm`.
struct IndexSealing: Sendable {
    private let names: NameCipher
    private let values: ValueCipher
    let alarm: TamperAlarm?

    init(_ encryption: StoreEncryption, alarm: TamperAlarm? = nil) {
        names = encryption.names
        values = encryption.values
        self.alarm = alarm
    }

    // MARK: - Entry and link names

    /// A name as stored in directory `parent`: empty once detached (nil), readable for a pool.
    func storedName(_ name: Data, in parent: EntryID?) throws -> Data {
        guard let parent else { return Data() }
        guard Self.isSealed(in: parent) else { return name }
        return try ioFailing { () throws(EncryptionError) in try names.encrypt(name, in: .directory(parent)) }
    }

    func plainName(_ stored: Data, in parent: EntryID?) throws -> Data {
        guard let parent else { return Data() }
        guard Self.isSealed(in: parent) else { return stored }
        return try ioFailing { () throws(EncryptionError) in try names.decrypt(stored, in: .directory(parent)) }
    }

    private static func isSealed(in parent: EntryID) -> Bool {
        parent != WellKnownEntry.root && parent != 0
    }

    func stored(_ record: EntryRecord) throws -> EntryRecord {
        var stored = record
        stored.name = try storedName(record.name, in: record.parent)
        if let target = record.target {
            guard let id = record.id else { throw CacheError.io(EINVAL) }
            stored.target = try ioFailing { () throws(EncryptionError) in
                try values.seal(Array(target), for: .symlinkTarget(entry: id))
            }
        }
        return stored
    }

    func plain(_ record: EntryRecord) throws -> EntryRecord {
        var plain = record
        plain.name = try plainName(record.name, in: record.parent)
        return try plainTarget(of: plain)
    }

    /// `record` with its symlink target (if any) opened, its name left as it is.
    func plainTarget(of record: EntryRecord) throws -> EntryRecord {
        guard let target = record.target else { return record }
        var plain = record
        plain.target = try ioFailing { () throws(EncryptionError) in
            Data(try values.open(target, for: .symlinkTarget(entry: record.entryID)))
        }
        return plain
    }

    // MARK: - Extended attributes

    func storedXattrName(_ name: Data, of entry: EntryID) throws -> Data {
        guard !Self.isOwnAttribute(name) else { return name }
        return try ioFailing { () throws(EncryptionError) in try names.encrypt(name, in: .xattrs(of: entry)) }
    }

    func plainXattrName(_ stored: Data, of entry: EntryID) throws -> Data {
        guard !Self.isOwnAttribute(stored) else { return stored }
        return try ioFailing { () throws(EncryptionError) in try names.decrypt(stored, in: .xattrs(of: entry)) }
    }

    /// `value` of the attribute named `name` (as the user gave it) on `entry`.
    func storedXattrValue(_ value: Data, named name: Data, of entry: EntryID) throws -> Data {
        try ioFailing { () throws(EncryptionError) in
            try values.seal(Array(value), for: .xattrValue(entry: entry, name: Array(name)))
        }
    }

    func plainXattrValue(_ stored: Data, named name: Data, of entry: EntryID) throws -> Data {
        try ioFailing { () throws(EncryptionError) in
            Data(try values.open(stored, for: .xattrValue(entry: entry, name: Array(name))))
        }
    }

    private static let ownAttributePrefix = Data("user.cache.".utf8)

    private static func isOwnAttribute(_ name: Data) -> Bool { name.starts(with: ownAttributePrefix) }

    // MARK: - Pool settings

    func storedSettings(_ settings: PoolSettings, of pool: EntryID) throws -> Data {
        let encoded = try JSONEncoder().encode(settings)
        return try ioFailing { () throws(EncryptionError) in try values.seal(Array(encoded), for: .poolSettings(pool: pool)) }
    }

    func plainSettings(_ stored: Data, of pool: EntryID) throws -> PoolSettings {
        let encoded = try ioFailing { () throws(EncryptionError) in try values.open(stored, for: .poolSettings(pool: pool)) }
        return try JSONDecoder().decode(PoolSettings.self, from: Data(encoded))
    }

    // MARK: - Errors

    /// A field that does not seal or open (damage or tampering) is EIO, as for a file's block.
    private func ioFailing<T>(_ body: () throws(EncryptionError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw CacheError.io(EIO)
        }
    }
}
