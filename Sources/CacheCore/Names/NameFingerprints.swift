import Crypto
import CachePolicy
import Foundation

/// What names a file to its pool's replacement policy (ghost entries, frequency counts) and
/// in its access trace: its directory and name, so a name that comes back is recognised.
/// A plaintext store uses ``Fingerprint`` (FNV-1a, the same in every process); an encrypted
/// store a keyed hash (HMAC-SHA256's first 8 bytes under a key of its own), so a trace on
/// its disk cannot be matched against guessed names.
struct NameFingerprints: Sendable {
    private let key: SymmetricKey?

    init(encryption: StoreEncryption?) {
        key = encryption?.dataKey.subkey(for: .fingerprints)
    }

    func of(parent: EntryID?, name: Data) -> UInt64 {
        guard let key else { return Fingerprint.of(parent: parent ?? 0, name: name) }
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: withUnsafeBytes(of: (parent ?? 0).bigEndian) { Data($0) })
        mac.update(data: name)
        return Data(mac.finalize()).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }
}
