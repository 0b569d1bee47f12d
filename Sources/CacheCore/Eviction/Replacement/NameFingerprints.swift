import CacheModel
import CacheNames
import Crypto
import CachePolicy
import Foundation

/// What names a file to its pool's replacement policy (ghost entries, frequency counts) and
/// in its access trace: its directory and name, so a name that comes back is recognised.
/// A plaintext store uses ``Fingerprint`` (FNV-1a, the same in every process); an encrypted
/// store a keyed hash (HMAC-SHA256's first 8 bytes under a key of its own), so a trace on
/// its disk cannot be matched against guessed names.
struct NameFingerprints: Sendable {
    /// The HMAC with its key already absorbed, copied for each name (a value: copies do not
    /// share state), so no name pays for the key's setup.
    private let keyed: HMAC<SHA256>?

    init(encryption: StoreEncryption?) {
        keyed = encryption.map { HMAC<SHA256>(key: $0.dataKey.subkey(for: .fingerprints)) }
    }

    func of(parent: EntryID?, name: Data) -> UInt64 {
        guard var mac = keyed else { return Fingerprint.of(parent: parent ?? 0, name: name) }
        mac.update(data: withUnsafeBytes(of: (parent ?? 0).bigEndian) { Data($0) })
        mac.update(data: name)
        return Data(mac.finalize()).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }
}

extension NameFingerprints: NameFingerprinting {}
