import CacheModel
import Crypto
import CryptoExtras
import Foundation

/// Deterministic authenticated encryption of names for the index: equal (name, scope) pairs
/// give equal strings, so a lookup stays an equality match on the encrypted column.
///
/// AES-256-GCM-SIV with a fixed nonce under its own key (HKDF of the data key, label "names").
/// Deterministic encryption reveals only which names are equal within one scope. The scope
/// (a directory, or one entry's xattr names) is the associated data, so a row moved to
/// another directory fails to open, and equal names in two directories look unrelated. A
/// rename to another directory therefore encrypts the name again, as it writes the row anew.
/// Names are padded to a multiple of 16 bytes (0x80 then zeros) so only a rough length shows.
/// The result is the ciphertext then the 16-byte tag (no nonce), for a BLOB column.
public struct NameCipher: Sendable {
    /// Where a name lives; its kind and id are authenticated with it.
    public enum Scope: Sendable, Equatable {
        /// A file's name in directory `parent`.
        case directory(EntryID)
        /// A user xattr's name on `entry`.
        case xattrs(of: EntryID)

        var associatedData: [UInt8] {
            switch self {
            case .directory(let parent): [1] + Self.bigEndian(parent)
            case .xattrs(let entry): [2] + Self.bigEndian(entry)
            }
        }

        private static func bigEndian(_ id: EntryID) -> [UInt8] { withUnsafeBytes(of: id.bigEndian) { Array($0) } }
    }

    private let key: SymmetricKey
    private static let nonceBytes = [UInt8](repeating: 0, count: 12)
    private static let tagSize = 16
    private static let padding = 16

    public init(dataKey: DataKey) {
        key = dataKey.subkey(for: .names)
    }

    public func encrypt(_ name: some Collection<UInt8>, in scope: Scope) throws(EncryptionError) -> Data {
        let padded = Array(name) + [0x80] + [UInt8](repeating: 0, count: Self.padding - 1 - name.count % Self.padding)
        do {
            let box = try AES.GCM._SIV.seal(padded, using: key, nonce: AES.GCM._SIV.Nonce(data: Self.nonceBytes),
                                            authenticating: scope.associatedData)
            var sealed = Data(box.ciphertext)  // from index 0: the box's parts are slices of one buffer
            sealed.append(box.tag)
            return sealed
        } catch {
            throw .cryptoFailure("seal a name: \(error)")
        }
    }

    /// The name, or `.tamperedValue` for bytes this key and scope did not make.
    public func decrypt(_ sealed: Data, in scope: Scope) throws(EncryptionError) -> Data {
        guard sealed.count >= Self.tagSize + Self.padding else { throw .tamperedValue }
        let padded: Data
        do {
            let box = try AES.GCM._SIV.SealedBox(nonce: AES.GCM._SIV.Nonce(data: Self.nonceBytes),
                                                 ciphertext: sealed.dropLast(Self.tagSize), tag: sealed.suffix(Self.tagSize))
            padded = try AES.GCM._SIV.open(box, using: key, authenticating: scope.associatedData)
        } catch {
            throw .tamperedValue
        }
        guard let marker = padded.lastIndex(where: { $0 != 0 }), padded[marker] == 0x80 else { throw .tamperedValue }
        return Data(padded[..<marker])
    }
}

/// base64url without padding (RFC 4648 §5): safe in any text column and in paths.
enum Base64URL {
    static func encode(_ bytes: some DataProtocol) -> String {
        String(Data(bytes).base64EncodedString()
            .map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }
            .filter { $0 != "=" })
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
