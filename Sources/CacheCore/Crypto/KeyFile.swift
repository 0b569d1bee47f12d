import CacheModel
import Crypto
import Glibc

/// A user's key file on disk: read as a secret, or written new by `cachefs keygen`.
public enum KeyFile {
    static let maximumByteCount = 64 << 10

    /// The file's whole content, read straight into wiped memory.
    public static func read(_ path: String, disk: any Disk = PosixDisk()) throws(EncryptionError) -> SecretBytes {
        let fd: Int32
        do {
            fd = try disk.open(path, flags: O_RDONLY, mode: 0)
        } catch {
            throw .keyFileUnreadable(path: path, errno: error.errno)
        }
        defer { disk.close(fd) }
        let content = try SecretBytes(capacity: maximumByteCount + 1) { (buffer) throws(EncryptionError) -> Int in
            do throws(CacheError) {
                return try disk.preadFully(fd, into: buffer, at: 0)
            } catch {
                throw .keyFileUnreadable(path: path, errno: error.errno)
            }
        }
        guard content.count <= maximumByteCount else { throw .keyFileTooLarge(path: path) }
        return content
    }

    /// Writes 32 new random bytes to `path` with mode 0600, durably; never replaces a file.
    public static func createRandom(at path: String, disk: any Disk = PosixDisk()) throws(EncryptionError) {
        let fd: Int32
        do {
            fd = try disk.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        } catch {
            if error.errno == EEXIST { throw .keyFileExists(path: path) }
            throw .io(operation: "create \(path)", errno: error.errno)
        }
        defer { disk.close(fd) }
        let key = SymmetricKey(size: .bits256)
        do {
            // The umask may only have removed bits; fchmod also makes sure none were added.
            if fchmod(fd, 0o600) != 0 { throw CacheError.io(Glibc.errno) }
            try key.withUnsafeBytes { bytes in try disk.pwriteFully(fd, from: bytes, at: 0) }
            try disk.fsync(fd, dataOnly: false)
        } catch {
            let code = CacheError.errno(for: error)
            // Part of a key would read as a passphrase later: it goes, or the error says it stayed.
            do throws(CacheError) {
                try disk.unlink(path)
            } catch {
                let left = "the partial file is left: it could not be removed: \(String(cString: strerror(error.errno)))"
                throw .io(operation: "write \(path) (\(left))", errno: code)
            }
            throw .io(operation: "write \(path)", errno: code)
        }
    }
}
