import CacheModel
import Crypto
import Foundation

/// Randomized authenticated encryption for values never searched by: xattr values, symlink
/// targets, pool policies (origins included) and the paths of logged events. AES-256-GCM with a random nonce under its
/// own key (HKDF of the data key, label "values"); stored as one blob: nonce + ciphertext +
/// tag. The context (what the value belongs to) is the associated data, so a value copied
/// into another row fails to open.
public struct ValueCipher: Sendable {
    /// What a value belongs to.
    public enum Context: Sendable, Equatable {
        case xattrValue(entry: EntryID, name: [UInt8])
        case symlinkTarget(entry: EntryID)
        /// A pool's whole settings, its origin included.
        case poolSettings(pool: EntryID)
        /// The path of an event in `events.jsonl` or `daemon.log`.
        case eventPath

        var associatedData: [UInt8] {
            switch self {
            case .xattrValue(let entry, let name): [1] + Self.bigEndian(entry) + name
            case .symlinkTarget(let entry): [2] + Self.bigEndian(entry)
            case .poolSettings(let pool): [3] + Self.bigEndian(pool)
            case .eventPath: [4]
            }
        }

        private static func bigEndian(_ id: EntryID) -> [UInt8] { withUnsafeBytes(of: id.bigEndian) { Array($0) } }
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
