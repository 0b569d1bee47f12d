import Crypto
import CryptoExtras
import Synchronization

/// The keys an encrypted store seals its shared tier's keys and values with
/// (docs/shared-tier.md, "Encrypted stores"). They come from the **user's** key, not from the
/// store's data key: every store has a random data key of its own, while machines that share a
/// tier are given the same key file (or passphrase), so each derives the same keys and finds
/// what the others wrote. A random key goes through HKDF with a label of its own; a passphrase
/// through scrypt at the standard cost with a fixed salt (it must be the same on every machine),
/// then HKDF. The derivation waits for the first call (`SharedTier` makes it at the mount when a
/// pool shares, or when a pool's tier is set), so a store that shares nothing never pays
/// scrypt; until then a passphrase stays in its wiped-on-release buffer.
public final class SharedTierKeys: Sendable {
    public struct Derived: Sendable {
        /// Makes the tier's keys (HMAC-SHA256 of the file's pool and path).
        let names: SymmetricKey
        /// Seals the tier's values (AES-256-GCM-SIV).
        let values: SymmetricKey
    }

    private enum State {
        case pending(SecretBytes)
        case derived(Derived)
    }

    static let scryptSalt = Array("cachefs shared tier scrypt salt v1".utf8)
    private let state: Mutex<State>

    public init(userKey: UserKey) {
        switch userKey {
        case .random(let key): state = Mutex(.derived(Self.derive(from: key)))
        case .passphrase(let passphrase): state = Mutex(.pending(passphrase))
        }
    }

    /// The tier's keys, derived at the first call (for a passphrase: about 0.4 s and 128 MiB once).
    public func keys() throws(EncryptionError) -> Derived {
        try state.withLock { current throws(EncryptionError) -> Derived in
            switch current {
            case .derived(let keys):
                return keys
            case .pending(let passphrase):
                let cost = KeyDerivation.standardScrypt
                let stretched: SymmetricKey
                do {
                    stretched = try passphrase.withUnsafeBytes { bytes in
                        try KDF.Scrypt.deriveKey(from: bytes, salt: Self.scryptSalt, outputByteCount: 32,
                                                 rounds: 1 << Int(cost.logRounds), blockSize: Int(cost.blockSize),
                                                 parallelism: Int(cost.parallelism))
                    }
                } catch {
                    throw .cryptoFailure("scrypt for the shared tier: \(error)")
                }
                let keys = Self.derive(from: stretched)
                current = .derived(keys)
                return keys
            }
        }
    }

    private static func derive(from root: SymmetricKey) -> Derived {
        func subkey(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: root, info: Array(label.utf8), outputByteCount: 32)
        }
        return Derived(names: subkey("cachefs shared tier names v1"), values: subkey("cachefs shared tier values v1"))
    }
}
