import CacheModel
import Glibc

/// `verify`'s look at one object file of an encrypted store, with the key: its header, a
/// stored size that some plaintext size gives, the plaintext size against the index's, and
/// the tag of its last block (of every block when `deep`). It reads the stored file itself,
/// not through an `EncryptingDisk`, so nothing raises an alarm or changes on the way.
struct EncryptedObjectCheck {
    let encryption: StoreEncryption
    let disk: any Disk
    let deep: Bool

    /// What is wrong with `record`'s bytes at `objectPath`, if anything; nil too for bytes
    /// that vanished since the walk of the objects (the walk's next run reports them missing).
    func problem(of record: EntryRecord, at objectPath: String, named path: String) throws -> StoreVerifier.Problem? {
        let id = record.entryID
        let fd: Int32
        do throws(CacheError) {
            fd = try disk.open(objectPath, flags: O_RDONLY | O_CLOEXEC, mode: 0)
        } catch where error.errno == ENOENT {
            return nil
        }
        defer { disk.close(fd) }
        let stored = try disk.size(of: fd)
        let plaintextSize: Int64
        if stored == 0 {
            // An object cut to 0 bytes has no header yet and reads as an empty file (see ObjectSealing).
            plaintextSize = 0
        } else {
            do throws(EncryptionError) {
                let file = try EncryptedFile.open(fd: fd, owner: id, encryption: encryption, disk: disk)
                plaintextSize = try file.size()
                let damaged = try file.damagedBlocks(lastOnly: !deep)
                if !damaged.isEmpty { return .damagedBlocks(id: id, path: path, blocks: damaged) }
            } catch {
                switch error {
                case .badFileHeader(let reason): return .badHeader(id: id, path: path, reason: reason)
                case .badStoredSize: return .tornBlocks(id: id, path: path, storedSize: stored)
                default: throw error
                }
            }
        }
        guard plaintextSize == record.size else {
            return .wrongSize(id: id, path: path, indexed: record.size, actual: plaintextSize)
        }
        return nil
    }
}
