import CacheModel
import Foundation
import Glibc

/// `cachefs verify`: checks an unmounted store against its index and, if asked, repairs it.
/// Unlike a mount, it walks every object, so it finds what a crash or a hand could leave.
/// An encrypted store is checked with its key: every object's header, its block layout and
/// its last block's tag, or every block's tag when `deep`.
public struct StoreVerifier {
    public enum Problem: Equatable, CustomStringConvertible, Sendable {
        case orphanBytes(path: String)
        case missingBytes(id: EntryID, path: String)
        case tornFile(id: EntryID, path: String)
        case wrongSize(id: EntryID, path: String, indexed: Int64, actual: Int64)
        /// Bytes whose size cannot be read (an I/O error, say): nothing about them is known,
        /// so a repair leaves them and their entry as they are.
        case unreadableBytes(id: EntryID, path: String, reason: String)
        case nameless(id: EntryID)
        case wrongLinkCount(id: EntryID, path: String, indexed: UInt32, actual: UInt32)
        /// The index's usage rows are not the sum of its entries (repair sums them again).
        case usageTotals(saved: String, summed: String)
        /// Encrypted stores only: the 32-byte header is not a valid one of this store.
        case badHeader(id: EntryID, path: String, reason: String)
        /// Encrypted stores only: a stored size no plaintext size gives (torn, or cut or
        /// grown by something other than whole blocks).
        case tornBlocks(id: EntryID, path: String, storedSize: Int64)
        /// Encrypted stores only: blocks that fail authentication (changed, swapped, moved,
        /// cut, appended or torn); reads that touch them answer EIO.
        case damagedBlocks(id: EntryID, path: String, blocks: [Int64])
        /// Encrypted stores only: an entry whose sealed name or target in the index does not
        /// open (changed, or moved to another directory).
        case sealedRow(id: EntryID)

        public var description: String {
            switch self {
            case .orphanBytes(let path): return "orphan bytes: \(path) has no index entry"
            case .missingBytes(let id, let path): return "missing bytes: \(path) (entry \(id)) has no stored bytes"
            case .tornFile(let id, let path): return "torn file: \(path) (entry \(id)) was being written"
            case .wrongSize(let id, let path, let indexed, let actual):
                return "wrong size: \(path) (entry \(id)) is \(actual) bytes, the index says \(indexed)"
            case .unreadableBytes(let id, let path, let reason):
                return "unreadable: \(path) (entry \(id)): its size cannot be read (\(reason))"
            case .nameless(let id): return "leftover: entry \(id) lost its name but kept its bytes"
            case .wrongLinkCount(let id, let path, let indexed, let actual):
                return "wrong link count: \(path) (entry \(id)) has \(actual) links, the index says \(indexed)"
            case .usageTotals(let saved, let summed):
                return "usage totals in the index (\(saved)) differ from the entries' sum (\(summed))"
            case .badHeader(let id, let path, let reason):
                return "bad header: \(path) (entry \(id)): \(reason)"
            case .tornBlocks(let id, let path, let storedSize):
                return "torn blocks: \(path) (entry \(id)) has \(storedSize) stored bytes, not whole blocks"
            case .damagedBlocks(let id, let path, let blocks):
                let list = blocks.map(String.init).joined(separator: ", ")
                return "damaged: \(path) (entry \(id)): \(blocks.count == 1 ? "block \(list) fails" : "blocks \(list) fail") authentication"
            case .sealedRow(let id):
                return "damaged: entry \(id): its sealed name or target in the index does not open"
            }
        }
    }

    public struct Report: Sendable {
        public var problems: [Problem] = []
        public var filesChecked = 0
        public var repaired = false
    }

    let layout: StoreLayout

    private let disk: any Disk
    /// Set for an encrypted store: its objects are checked with the key.
    private let encryptedObjects: EncryptedObjectCheck?
    private let encryption: StoreEncryption?

    /// `encryption` is the unlocked key of an encrypted store (nil for a plaintext one);
    /// `deep` checks every block's tag rather than the last one's.
    public init(storePath: String, encryption: StoreEncryption? = nil, deep: Bool = false,
                disk: any Disk = PosixDisk()) {
        layout = StoreLayout(root: storePath)
        self.disk = disk
        self.encryption = encryption
        encryptedObjects = encryption.map { EncryptedObjectCheck(encryption: $0, disk: disk, deep: deep) }
    }

    /// Checks the store (holding its lock, so no daemon can run meanwhile) and repairs what
    /// it found when `repair` is set, the way recovery at mount would. `progress` hears the
    /// files checked so far and the total, every few hundred files and at the end.
    public func run(repair: Bool, progress: ((_ checked: Int, _ total: Int) -> Void)? = nil) throws -> Report {
        do throws(CacheError) {
            _ = try disk.fileSize(layout.indexPath)
        } catch .io(ENOENT) {
            throw StoreError.cannotOpen(layout.root, "no index.sqlite: not a cachefs store")
        } catch {
            throw StoreError.cannotOpen(layout.root, "index.sqlite: \(error)")
        }
        // Without the key every object would look the wrong size: nothing is checked.
        if encryptedObjects == nil && StoreKeyFile.isEncrypted(store: layout.root) {
            throw StoreError.cannotOpen(layout.root, "an encrypted store: verify needs its key")
        }
        let lock = try StoreLock(layout: layout, disk: disk)
        defer { withExtendedLifetime(lock) {} }
        let index = try IndexDatabase(path: layout.indexPath, encryption: encryption)
        var report = Report()
        var indexed: [EntryID: EntryRecord] = [:]
        let (files, unopened) = try index.allFiles()
        for record in files { indexed[record.entryID] = record }
        report.problems += unopened.map { .sealedRow(id: $0) }
        var present: Set<EntryID> = []
        for directory in StoreLayout.fanOutDirectories {
            let folder = layout.objectsPath + "/" + directory
            for name in try namesIfPresent(in: folder) {
                // An entry whose sealed row does not open is reported once, below, with its bytes.
                if let id = EntryID(name), unopened.contains(id) { continue }
                guard let id = EntryID(name), indexed[id] != nil else {
                    report.problems.append(.orphanBytes(path: folder + "/" + name))
                    continue
                }
                present.insert(id)
            }
        }
        for record in indexed.values.sorted(by: { $0.entryID < $1.entryID }) {
            report.filesChecked += 1
            if report.filesChecked % 256 == 0 { progress?(report.filesChecked, indexed.count) }
            let id = record.entryID
            // Only names the entry in the report; a directory that cannot be read leaves its part out.
            let path = EntryPath.of(record) { try? index.entry($0) }
            if record.parent == nil {
                report.problems.append(.nameless(id: id))
            } else if !present.contains(id) {
                report.problems.append(.missingBytes(id: id, path: path))
            } else if record.writing && !record.persistent {
                report.problems.append(.tornFile(id: id, path: path))
            } else if let encryptedObjects {
                if let problem = try encryptedObjects.problem(of: record, at: layout.objectPath(for: id), named: path) {
                    report.problems.append(problem)
                }
            } else {
                do throws(CacheError) {
                    let actual = try disk.fileSize(layout.objectPath(for: id))
                    if actual != record.size {
                        report.problems.append(.wrongSize(id: id, path: path, indexed: record.size, actual: actual))
                    }
                } catch where error.errno == ENOENT {
                    report.problems.append(.missingBytes(id: id, path: path))
                } catch {
                    report.problems.append(.unreadableBytes(id: id, path: path, reason: String(cString: strerror(error.errno))))
                }
            }
        }
        for (record, actual) in try index.linkCountMismatches() {
            // Only names the entry in the report; a directory that cannot be read leaves its part out.
            let path = EntryPath.of(record) { try? index.entry($0) }
            report.problems.append(.wrongLinkCount(id: record.entryID, path: path, indexed: record.linkCount,
                                                   actual: actual))
        }
        progress?(report.filesChecked, indexed.count)
        let saved = try index.usageTotals()
        let summed = try index.usageByPool().filter { $0.value != PoolUsage() }
        if saved != summed {
            report.problems.append(.usageTotals(saved: UsageTotals.describe(saved), summed: UsageTotals.describe(summed)))
        }
        if repair && !report.problems.isEmpty {
            try self.repair(report.problems, index: index)
            report.repaired = true
        }
        return report
    }

    /// A fan-out folder that is missing holds no bytes (entries whose bytes are missing are
    /// reported); one that cannot be read fails the check: its files would all look missing.
    private func namesIfPresent(in folder: String) throws -> [String] {
        do throws(CacheError) {
            return try disk.contentsIfPresent(folder)
        } catch {
            throw StoreError.cannotOpen(layout.root, "cannot list \(folder): \(String(cString: strerror(error.errno)))")
        }
    }

    /// Bytes already gone are what a repair wants; any other failure stops it, said.
    private func removeIfPresent(_ path: String) throws {
        do throws(CacheError) {
            try disk.unlink(path)
        } catch where error.errno == ENOENT {}
    }

    private func repair(_ problems: [Problem], index: IndexDatabase) throws {
        for problem in problems {
            switch problem {
            case .orphanBytes(let path):
                try removeIfPresent(path)
            case .missingBytes(let id, _):
                try index.delete(id)
            case .tornFile(let id, _), .nameless(let id), .badHeader(let id, _, _), .tornBlocks(let id, _, _),
                 .damagedBlocks(let id, _, _), .sealedRow(let id):
                try index.delete(id)
                try removeIfPresent(layout.objectPath(for: id))
            case .wrongSize(let id, _, _, let actual):
                if var record = try index.entry(id) {
                    record.size = actual
                    try index.update(record)
                }
            case .wrongLinkCount(let id, _, _, let actual):
                if var record = try index.entry(id) {
                    record.linkCount = actual
                    try index.update(record)
                }
            case .usageTotals:
                try index.recomputeUsageTotals()
            case .unreadableBytes:
                // The bytes may be whole: dropping them on a read error could lose a file.
                continue
            }
        }
        try index.checkpoint()
    }
}
