import Crypto
import Foundation

/// Randomized authenticated encryption for values the index never searches by: xattr values,
/// symlink targets, pool origins and policy values. AES-256-GCM with a random nonce under its
/// own key (HKDF of the data key, label "values"); stored as one blob: nonce + ciphertext +
/// tag. The context (what the value belongs to) is the associated data, so a value copied
/// into another row fails to open.
public struct ValueCipher: Sendable {
    /// What a value belongs to.
    public enum Context: Sendable, Equatable {
        case xattrValue(entry: EntryID, name: [UInt8])
        case symlinkTarget(entry: EntryID)
        case origin(pool: String)
        case policyValue(pool: String, key: String)

        var associatedData: [UInt8] {
            switch self {
            case .xattrValue(let entry, let name): [1] + Self.bigEndian(entry) + name
            case .symlinkTarget(let entry): [2] + Self.bigEndian(entry)
            case .origin(let pool): [3] + Self.field(Array(pool.utf8))
            case .policyValue(let pool, let key): [4] + Self.field(Array(pool.utf8)) + Self.field(Array(key.utf8))
            }
        }

        private static func bigEndian(_ id: EntryID) -> [UInt8] { withUnsafeBytes(of: id.bigEndian) { Array($0) } }

        /// Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        private static func field(_ bytes: [UInt8]) -> [UInt8] { bigEndian(EntryID(bytes.count)) + bytes }
    }

    private let key: SymmetricKey

    public init(dataKey: DataKey) {
        key = dataKey.subkey(for: .values)
    }

    public func seal(_ value: [UInt8], for context: Context) throws(EncryptionError) -> Data {
        do {
            let box = try AES.GCM.seal(value, using: key, nonce: AES.GCM.Nonce(), authenticating: context.associatedData)
            return Data(box.nonce) + box.ciphertext + box.tag
        } catch {
            throw .cryptoFailure("seal a value: \(error)")
        }
    }

    /// The value, or `.tamperedValue`.
    public func open(_ blob: Data, for context: Context) throws(EncryptionError) -> [UInt8] {
        do {
            let box = try AES.GCM.SealedBox(combined: blob)
            return try Array(AES.GCM.open(box, using: key, authenticating: context.associatedData))
        } catch {
            throw .tamperedValue
        }
    }
}
