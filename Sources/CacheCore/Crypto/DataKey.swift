import Crypto
import Foundation

/// The store's random 32-byte data key, the root of every key that encrypts something. It
/// never leaves memory unwrapped; each use gets its own subkey through HKDF-SHA256, with a
/// distinct label, so no two purposes ever share a key.
public struct DataKey: Sendable {
    let key: SymmetricKey

    public static let byteCount = 32

    init(_ key: SymmetricKey) {
        self.key = key
    }

    static func random() -> DataKey {
        DataKey(SymmetricKey(size: .bits256))
    }

    enum Purpose: String {
        case fileContents = "cachefs file contents v1"
        case names = "cachefs names v1"
        case values = "cachefs values v1"
        case fingerprints = "cachefs name fingerprints v1"
    }

    func subkey(for purpose: Purpose, salt: [UInt8] = []) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Array(purpose.rawValue.utf8), outputByteCount: 32)
    }
}
