@testable import CacheCore
import Crypto
import Foundation
import Testing

/// An encrypted store's shared tier (docs/shared-tier.md, "Encrypted stores"): keys every
/// machine with the same user key derives alike and that show no name, and values that open
/// only whole, unchanged, at their own key, under that key.
@Suite struct SharedTierSealingTests {
    private static let randomKey = SymmetricKey(size: .bits256)
    private let sealing = SharedTierSealing(keys: SharedTierKeys(userKey: .random(Self.randomKey)))

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func tierKey(_ sealing: SharedTierSealing, pool: String = "thumbnails", path: [String]) throws -> [UInt8] {
        let plain = SharedTierKey.key(pool: bytes(pool), path: path.map(bytes))
        return try sealing.key(pool: bytes(pool), plainKey: plain)
    }

    private func refused(_ value: [UInt8], at key: [UInt8], by sealing: SharedTierSealing? = nil) -> Bool {
        if case .failure = (sealing ?? self.sealing).open(value, at: key) { return true }
        return false
    }

    @Test(arguments: [0, 1, 16 * 1024, 1_000_003])
    func aValueRoundTrips(size: Int) throws {
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let key = try tierKey(sealing, path: ["2026", "photo.jpg"])
        let value = try sealing.seal(content, at: key)
        #expect(Array(value.prefix(6)) == bytes("CFST1") + [2])
        #expect(value.count == 6 + 12 + size + 16)
        #expect(try sealing.open(value, at: key).get() == content)
        // A fresh nonce each time: sealing again gives another value, which opens alike.
        let again = try sealing.seal(content, at: key)
        #expect(again != value)
        #expect(try sealing.open(again, at: key).get() == content)
    }

    @Test func everyFlippedByteIsRefused() throws {
        let key = try tierKey(sealing, path: ["photo.jpg"])
        let value = try sealing.seal(bytes("a thumbnail's bytes, sealed"), at: key)
        for index in value.indices {
            var changed = value
            changed[index] ^= 0x01
            #expect(refused(changed, at: key), "a flipped byte \(index) of \(value.count) was accepted")
        }
    }

    @Test func aCutOrLengthenedValueIsRefused() throws {
        let key = try tierKey(sealing, path: ["photo.jpg"])
        let value = try sealing.seal([UInt8](repeating: 7, count: 1000), at: key)
        for cut in [0, 5, 6, 17, 18, 33, 34, value.count / 2, value.count - 16, value.count - 1] {
            #expect(refused(Array(value.prefix(cut)), at: key), "a value cut to \(cut) bytes was accepted")
        }
        #expect(refused(value + [0], at: key), "a value with a byte appended was accepted")
    }

    @Test func aValueMovedToAnotherKeyIsRefused() throws {
        let key = try tierKey(sealing, path: ["a", "photo.jpg"])
        let value = try sealing.seal(bytes("belongs to a/photo.jpg"), at: key)
        for other in [try tierKey(sealing, path: ["a", "other.jpg"]), try tierKey(sealing, path: ["b", "photo.jpg"]),
                      try tierKey(sealing, pool: "avatars", path: ["a", "photo.jpg"])] {
            #expect(other != key)
            #expect(refused(value, at: other), "a value moved to another key was accepted")
        }
    }

    @Test func anotherUserKeyFindsOtherKeysAndOpensNothing() throws {
        let other = SharedTierSealing(keys: SharedTierKeys(userKey: .newRandom()))
        let key = try tierKey(sealing, path: ["photo.jpg"])
        #expect(try tierKey(other, path: ["photo.jpg"]) != key)
        let value = try sealing.seal(bytes("secret thumbnail"), at: key)
        #expect(refused(value, at: key, by: other), "a value sealed under another user key was accepted")
    }

    /// Two stores locked with the same random key have data keys of their own, yet the same
    /// tier keys: each opens what the other sealed.
    @Test func twoStoresWithTheSameKeyFileShareTheTier() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let userKey = UserKey.random(Self.randomKey)
        let a = try StoreKeyFile.create(inStore: try makeStore(directory, "a"), userKey: userKey)
        let b = try StoreKeyFile.create(inStore: try makeStore(directory, "b"), userKey: userKey)
        #expect(a.storeID != b.storeID)
        let (onA, onB) = (SharedTierSealing(keys: a.sharedTier), SharedTierSealing(keys: b.sharedTier))
        let key = try tierKey(onA, path: ["2026", "photo.jpg"])
        #expect(try tierKey(onB, path: ["2026", "photo.jpg"]) == key)
        #expect(try tierKey(sealing, path: ["2026", "photo.jpg"]) == key)
        let value = try onA.seal(bytes("made on A"), at: key)
        #expect(try onB.open(value, at: key).get() == bytes("made on A"))
        // Unlocked again (a remount): the same keys.
        let unlocked = try StoreKeyFile.unlock(store: directory + "/a", userKey: userKey)
        #expect(try tierKey(SharedTierSealing(keys: unlocked.sharedTier), path: ["2026", "photo.jpg"]) == key)
    }

    /// A passphrase is stretched with a salt every machine knows, so two stores given the same
    /// passphrase (each with its own store salt) agree, and another passphrase does not.
    @Test func twoStoresWithTheSamePassphraseShareTheTier() throws {
        func passphrase(_ text: String) throws -> UserKey { try UserKey(passphrase: SecretBytes(copying: Array(text.utf8))) }
        let one = SharedTierSealing(keys: SharedTierKeys(userKey: try passphrase("correct horse battery")))
        let two = SharedTierSealing(keys: SharedTierKeys(userKey: try passphrase("correct horse battery")))
        let other = SharedTierSealing(keys: SharedTierKeys(userKey: try passphrase("correct horse battery!")))
        let key = try tierKey(one, path: ["photo.jpg"])
        #expect(try tierKey(two, path: ["photo.jpg"]) == key)
        #expect(try tierKey(other, path: ["photo.jpg"]) != key)
        #expect(try tierKey(sealing, path: ["photo.jpg"]) != key)
        #expect(try two.open(one.seal(bytes("shared"), at: key), at: key).get() == bytes("shared"))
    }

    /// The key is text of one length whatever the names: no name, no length, no depth shows.
    @Test func keysShowNoNameNorItsLength() throws {
        let short = try tierKey(sealing, pool: "p", path: ["a"])
        let long = try tierKey(sealing, pool: "thumbnails-of-the-secret-project",
                           path: ["2026", "november", String(repeating: "very-long-name-", count: 10) + ".jpg"])
        #expect(short.count == long.count)
        #expect(short.starts(with: bytes("cachefs:s1:")))
        #expect(short.allSatisfy { $0 >= 0x21 && $0 < 0x7F })
        let text = String(decoding: long, as: UTF8.self)
        for word in ["thumbnails", "secret", "project", "2026", "november", "very-long", ".jpg"] {
            #expect(!text.contains(word), "\(text) shows \(word)")
        }
        // Files of one pool share the key's pool part; the path part is another.
        let sibling = try tierKey(sealing, pool: "p", path: ["b"])
        #expect(short.prefix(while: { $0 != UInt8(ascii: "/") }) == sibling.prefix(while: { $0 != UInt8(ascii: "/") }))
        #expect(short != sibling)
        // Another directory or name split is another key, as for plaintext keys.
        let keys: Set<[UInt8]> = [try tierKey(sealing, path: ["a", "b"]), try tierKey(sealing, path: ["b", "a"]),
                                  try tierKey(sealing, path: ["ab"]), try tierKey(sealing, pool: "q", path: ["a", "b"])]
        #expect(keys.count == 4)
    }

    /// A plaintext store's value never opens as a sealed one, nor the reverse.
    @Test func plaintextAndSealedValuesDoNotMix() throws {
        let key = try tierKey(sealing, path: ["photo.jpg"])
        #expect(refused(SharedTierValue.encode(bytes("plaintext")), at: key))
        guard case .failure = SharedTierValue.decode(try sealing.seal(bytes("sealed"), at: key)) else {
            Issue.record("a sealed value was read as a plaintext one")
            return
        }
    }

    private func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-tier-keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func makeStore(_ directory: String, _ name: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
