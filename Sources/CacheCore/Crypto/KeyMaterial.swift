import Crypto
import CryptoExtras
import Foundation

/// The user's key as given: 32 random bytes (from `cachefs keygen`), or a passphrase to
/// stretch with scrypt. Either one only unlocks the store's data key (``StoreKeyFile``).
public enum UserKey: Sendable {
    case random(SymmetricKey)
    case passphrase(SecretBytes)

    public static let randomKeyByteCount = 32

    /// A new random key, as `cachefs keygen` writes.
    public static func newRandom() -> UserKey { .random(SymmetricKey(size: .bits256)) }

    /// A key file's content: exactly 32 bytes are a random key; anything else is a passphrase,
    /// without its trailing line ending.
    public init(keyFileContent content: SecretBytes) throws(EncryptionError) {
        if content.count == Self.randomKeyByteCount {
            self = .random(content.withUnsafeBytes { SymmetricKey(data: $0) })
        } else {
            try self.init(passphrase: content.droppingLineEnding())
        }
    }

    public init(passphrase: SecretBytes) throws(EncryptionError) {
        guard passphrase.count > 0 else { throw .emptyPassphrase }
        self = .passphrase(passphrase)
    }

    var derivationKind: KeyDerivation.Kind {
        switch self {
        case .random: return .hkdf
        case .passphrase: return .scrypt
        }
    }
}

/// How a user key becomes the key that wraps the data key, as recorded in the store's key
/// file. A random key needs no stretching (HKDF only); a passphrase goes through scrypt.
public struct KeyDerivation: Sendable, Equatable {
    public enum Kind: UInt8, Sendable {
        case hkdf = 0
        case scrypt = 1
    }

    public var kind: Kind
    /// scrypt's cost: N = 2^logRounds, block size r, parallelism p (unused for `.hkdf`).
    public var logRounds: UInt8
    public var blockSize: UInt8
    public var parallelism: UInt8
    public var salt: [UInt8]

    public static let saltByteCount = 32
    /// Measured on the development machine: about 0.4 s and 128 MiB for one unlock.
    public static let standardScrypt = (logRounds: UInt8(17), blockSize: UInt8(8), parallelism: UInt8(1))
    /// A tampered key file must not make an unlock allocate without bound.
    static let maximumScryptMemory = 1 << 30

    public init(kind: Kind, logRounds: UInt8, blockSize: UInt8, parallelism: UInt8, salt: [UInt8]) {
        self.kind = kind
        self.logRounds = logRounds
        self.blockSize = blockSize
        self.parallelism = parallelism
        self.salt = salt
    }

    /// Fresh parameters with a new random salt, for `key`'s kind. Tests pass cheaper costs.
    public static func fresh(for key: UserKey, scryptLogRounds: UInt8 = standardScrypt.logRounds,
                             scryptBlockSize: UInt8 = standardScrypt.blockSize,
                             scryptParallelism: UInt8 = standardScrypt.parallelism) -> KeyDerivation {
        let isScrypt = key.derivationKind == .scrypt
        return KeyDerivation(kind: key.derivationKind, logRounds: isScrypt ? scryptLogRounds : 0,
                             blockSize: isScrypt ? scryptBlockSize : 0, parallelism: isScrypt ? scryptParallelism : 0,
                             salt: RandomBytes.make(saltByteCount))
    }

    /// scrypt's memory: 128·r·N·p bytes; nil when the parameters are not valid scrypt ones.
    var scryptMemory: Int? {
        guard kind == .scrypt, (1...30).contains(logRounds), blockSize > 0, parallelism > 0 else { return nil }
        return 128 * Int(blockSize) * (1 << Int(logRounds)) * Int(parallelism)
    }

    /// The key-encryption key for `userKey`; `.wrongKey` when the key is not of the kind
    /// this store was locked with (a passphrase for a random-key store, or the reverse).
    func wrappingKey(for userKey: UserKey) throws(EncryptionError) -> SymmetricKey {
        guard userKey.derivationKind == kind else { throw .wrongKey }
        switch userKey {
        case .random(let key):
            return HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Array("cachefs wrapping key v1".utf8),
                                          outputByteCount: 32)
        case .passphrase(let passphrase):
            do {
                return try passphrase.withUnsafeBytes { bytes in
                    try KDF.Scrypt.deriveKey(from: bytes, salt: salt, outputByteCount: 32, rounds: 1 << Int(logRounds),
                                             blockSize: Int(blockSize), parallelism: Int(parallelism))
                }
            } catch {
                throw .cryptoFailure("scrypt: \(error)")
            }
        }
    }
}

/// Random bytes from the system's generator (getrandom on Linux).
enum RandomBytes {
    static func make(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
