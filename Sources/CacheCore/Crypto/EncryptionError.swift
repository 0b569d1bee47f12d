import CacheModel
import Glibc

/// Every failure of the encryption core, each with a one-line description a command can
/// print as it is.
public enum EncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No key source was found.
    case noKey
    case keyFileUnreadable(path: String, errno: Int32)
    case keyFileTooLarge(path: String)
    case emptyPassphrase
    case passphrasesDiffer
    /// `keygen` never overwrites an existing file.
    case keyFileExists(path: String)
    /// The store's key check failed: the key given is not the one that locked this store.
    case wrongKey
    case notEncrypted(store: String)
    case alreadyEncrypted(store: String)
    /// The store's wrapped-key file is damaged or of an unknown format.
    case storeKeyFileCorrupt(path: String, reason: String)
    /// A stored block failed authentication: changed, moved, swapped, truncated or torn.
    case tampered(block: Int64)
    /// A name or value from the index failed authentication.
    case tamperedValue
    case badFileHeader(reason: String)
    /// A stored file's size that no plaintext size gives (torn or truncated mid-block).
    case badStoredSize(Int64)
    /// A syscall failed with this errno.
    case io(operation: String, errno: Int32)
    /// swift-crypto refused an operation that cannot fail with valid keys; a bug if seen.
    case cryptoFailure(String)

    public var description: String {
        switch self {
        case .noKey:
            return "no key: give -o key_file=PATH, a systemd credential cachefs.key, or run on a terminal"
        case .keyFileUnreadable(let path, let code):
            return "cannot read key file \(path): \(String(cString: strerror(code)))"
        case .keyFileTooLarge(let path):
            return "key file \(path) is larger than 64 KiB: not a key or passphrase"
        case .emptyPassphrase:
            return "empty passphrase"
        case .passphrasesDiffer:
            return "the passphrases differ"
        case .keyFileExists(let path):
            return "\(path) already exists: keygen never overwrites a file (move it away first)"
        case .wrongKey:
            return "wrong key: the key check of this store failed"
        case .notEncrypted(let store):
            return "\(store) is not an encrypted store: it has no \(StoreKeyFile.fileName) file"
        case .alreadyEncrypted(let store):
            return "\(store) already has a \(StoreKeyFile.fileName) file"
        case .storeKeyFileCorrupt(let path, let reason):
            return "\(path) is damaged: \(reason)"
        case .tampered(let block):
            return "block \(block) failed authentication (changed, moved, truncated or torn)"
        case .tamperedValue:
            return "an encrypted name or value failed authentication"
        case .badFileHeader(let reason):
            return "bad encrypted file header: \(reason)"
        case .badStoredSize(let size):
            return "stored size \(size) is not that of any encrypted file (torn or truncated)"
        case .io(let operation, let code):
            return "\(operation): \(String(cString: strerror(code)))"
        case .cryptoFailure(let reason):
            return "encryption failed: \(reason)"
        }
    }

    /// The errno a read or write that met this error answers: EIO for anything that failed
    /// authentication, the syscall's own errno for I/O.
    public var errno: Int32 {
        if case .io(_, let code) = self { return code == 0 ? EIO : code }
        return EIO
    }

    static func from(_ error: CacheError, _ operation: String) -> EncryptionError {
        .io(operation: operation, errno: error.errno)
    }
}
