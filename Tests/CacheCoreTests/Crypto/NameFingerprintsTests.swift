@testable import CacheCore
import CachePolicy
import Foundation
import Testing

/// A plaintext store fingerprints names with FNV (as traces always did); an encrypted store
/// with a hash under its own key, so a trace cannot be matched against guessed names.
@Suite struct NameFingerprintsTests {
    private let name = Data("report.pdf".utf8)

    @Test func aPlaintextStoreKeepsTheSharedFingerprint() {
        #expect(NameFingerprints(encryption: nil).of(parent: 42, name: name) == Fingerprint.of(parent: 42, name: name))
    }

    @Test func anEncryptedStoresFingerprintsDependOnItsKey() throws {
        let store = try TestStore()
        let encryption = try StoreKeyFile.create(inStore: store.path, userKey: TestKeys.random())
        let fingerprints = NameFingerprints(encryption: encryption)
        let first = fingerprints.of(parent: 42, name: name)
        #expect(first == fingerprints.of(parent: 42, name: name))
        #expect(first != Fingerprint.of(parent: 42, name: name))
        #expect(first != fingerprints.of(parent: 43, name: name))
        #expect(first != fingerprints.of(parent: 42, name: Data("report.pdg".utf8)))
        let other = try TestStore()
        let otherKey = try StoreKeyFile.create(inStore: other.path, userKey: TestKeys.random())
        #expect(first != NameFingerprints(encryption: otherKey).of(parent: 42, name: name))
    }
}
