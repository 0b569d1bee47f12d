@testable import CacheCore
import Foundation
import Glibc
import Testing

/// The store's wrapped-key file: create, unlock, the key check, damage, and crash-safe rekey.
@Suite struct StoreKeyFileTests {
    private func create(_ store: ScratchDirectory, _ key: UserKey) throws -> StoreEncryption {
        try StoreKeyFile.create(inStore: store.path, userKey: key, derivation: TestKeys.cheapDerivation(for: key))
    }

    private func rekey(_ store: ScratchDirectory, _ old: UserKey, _ new: UserKey, disk: any Disk = PosixDisk()) throws {
        try StoreKeyFile.rekey(store: store.path, from: old, to: new, derivation: TestKeys.cheapDerivation(for: new),
                               disk: disk)
    }

    @Test func theKeyThatCreatedAStoreUnlocksItsDataKey() throws {
        for key in [TestKeys.random(), try TestKeys.passphrase("correct horse")] {
            let store = try ScratchDirectory()
            let created = try create(store, key)
            let unlocked = try StoreKeyFile.unlock(store: store.path, userKey: key)
            #expect(try sameDataKey(created, unlocked))
            #expect(unlocked.storeID == created.storeID && unlocked.storeID.count == 16)
            #expect(unlocked.layout.blockSize == BlockLayout.defaultBlockSize)
            #expect(try store.bytes(of: StoreKeyFile.fileName).count == StoreKeyFile.byteCount)
            var info = stat()
            #expect(stat(store.file(StoreKeyFile.fileName), &info) == 0 && info.st_mode & 0o777 == 0o600)
        }
    }

    @Test func twoStoresHaveDifferentDataKeysAndIDs() throws {
        let key = TestKeys.random()
        let (first, second) = (try ScratchDirectory(), try ScratchDirectory())
        let a = try create(first, key)
        let b = try create(second, key)
        #expect(try !sameDataKey(a, b))
        #expect(a.storeID != b.storeID)
    }

    @Test func aWrongKeyIsCaughtByTheKeyCheck() throws {
        let store = try ScratchDirectory()
        let key = try TestKeys.passphrase("right")
        _ = try create(store, key)
        let before = try store.bytes(of: StoreKeyFile.fileName)
        #expect(throws: EncryptionError.wrongKey) { try StoreKeyFile.unlock(store: store.path, userKey: TestKeys.passphrase("wrong")) }
        #expect(throws: EncryptionError.wrongKey) { try StoreKeyFile.unlock(store: store.path, userKey: TestKeys.random()) }
        #expect(throws: EncryptionError.wrongKey) { try rekey(store, TestKeys.passphrase("wrong"), TestKeys.random()) }
        #expect(try store.bytes(of: StoreKeyFile.fileName) == before)
    }

    @Test func aPlaintextStoreAndAnEncryptedStoreEachSaySo() throws {
        let store = try ScratchDirectory()
        #expect(!StoreKeyFile.isEncrypted(store: store.path))
        #expect(throws: EncryptionError.notEncrypted(store: store.path)) {
            try StoreKeyFile.unlock(store: store.path, userKey: TestKeys.random())
        }
        let key = TestKeys.random()
        _ = try create(store, key)
        #expect(StoreKeyFile.isEncrypted(store: store.path))
        #expect(throws: EncryptionError.alreadyEncrypted(store: store.path)) { try create(store, key) }
    }

    @Test func damageIsToldApartFromAWrongKey() throws {
        let store = try ScratchDirectory()
        let key = TestKeys.random()
        _ = try create(store, key)
        let good = try store.bytes(of: StoreKeyFile.fileName)
        let path = store.file(StoreKeyFile.fileName)
        for position in [0, 5, 20, 70, good.count - 1] {
            var bad = good
            bad[position] ^= 0x01
            try store.write(bad, to: StoreKeyFile.fileName)
            #expect(throws: EncryptionError.storeKeyFileCorrupt(path: path, reason: "its checksum does not match")) {
                try StoreKeyFile.unlock(store: store.path, userKey: key)
            }
        }
        try store.write(Array(good.dropLast()), to: StoreKeyFile.fileName)
        #expect(throws: EncryptionError.storeKeyFileCorrupt(path: path, reason: "155 bytes, expected 156")) {
            try StoreKeyFile.unlock(store: store.path, userKey: key)
        }
    }

    /// A file forged with a valid checksum still cannot change a parameter unnoticed (the
    /// parameters are the seal's associated data), nor ask for unbounded scrypt memory.
    @Test func forgedParametersFailEvenWithAValidChecksum() throws {
        let store = try ScratchDirectory()
        let key = TestKeys.random()
        _ = try create(store, key)
        let path = store.file(StoreKeyFile.fileName)
        let original = try StoreKeyFile(decoding: store.bytes(of: StoreKeyFile.fileName), path: path)

        var otherID = original
        otherID.storeID[0] ^= 1
        try store.write(otherID.encoded(), to: StoreKeyFile.fileName)
        #expect(throws: EncryptionError.wrongKey) { try StoreKeyFile.unlock(store: store.path, userKey: key) }

        var otherBlockSize = original
        otherBlockSize.blockSize = original.blockSize * 2
        try store.write(otherBlockSize.encoded(), to: StoreKeyFile.fileName)
        #expect(throws: EncryptionError.wrongKey) { try StoreKeyFile.unlock(store: store.path, userKey: key) }

        var greedy = original
        greedy.derivation = KeyDerivation(kind: .scrypt, logRounds: 30, blockSize: 8, parallelism: 1, salt: original.derivation.salt)
        try store.write(greedy.encoded(), to: StoreKeyFile.fileName)
        #expect(throws: EncryptionError.storeKeyFileCorrupt(path: path, reason: "scrypt parameters out of range")) {
            try StoreKeyFile.unlock(store: store.path, userKey: TestKeys.passphrase("x"))
        }
    }

    @Test func rekeyKeepsTheDataKeyAndOnlyTheNewKeyUnlocks() throws {
        let store = try ScratchDirectory()
        let old = try TestKeys.passphrase("old")
        let new = TestKeys.random()
        let created = try create(store, old)
        let before = try store.bytes(of: StoreKeyFile.fileName)
        try rekey(store, old, new)
        #expect(try store.bytes(of: StoreKeyFile.fileName) != before)
        #expect(try sameDataKey(created, StoreKeyFile.unlock(store: store.path, userKey: new)))
        #expect(try StoreKeyFile.unlock(store: store.path, userKey: new).storeID == created.storeID)
        #expect(throws: EncryptionError.wrongKey) { try StoreKeyFile.unlock(store: store.path, userKey: old) }
        #expect(!FileManager.default.fileExists(atPath: store.file(StoreKeyFile.fileName + ".new")))
    }

    /// A rekey stopped at each of its changes: the temporary file torn, written but not
    /// fsynced, fsynced but not renamed, renamed but the directory not fsynced, and done.
    /// Each time exactly the old or the new key unlocks the same data key, a wrong key never
    /// does, and the next unlock clears a leftover `wrapped-key.new`.
    @Test func aRekeyInterruptedAtAnyStepLeavesOneOfTheKeysWorking() throws {
        let outcomes: [(failAt: Int, tearing: Bool, newKeyWorks: Bool)] = [
            (1, true, false), (1, false, false), (2, false, false), (3, false, false), (4, false, true), (5, false, true),
        ]
        for outcome in outcomes {
            let store = try ScratchDirectory()
            let old = try TestKeys.passphrase("old")
            let new = try TestKeys.passphrase("new")
            let created = try create(store, old)
            let disk = StoppingDisk(failAt: outcome.failAt, tearing: outcome.tearing)
            switch Result(catching: { try rekey(store, old, new, disk: disk) }) {
            case .success: #expect(outcome.failAt == 5, "\(outcome)")
            case .failure: #expect(outcome.failAt < 5, "\(outcome)")
            }

            let (working, failing) = outcome.newKeyWorks ? (new, old) : (old, new)
            #expect(try sameDataKey(created, StoreKeyFile.unlock(store: store.path, userKey: working)), "\(outcome)")
            #expect(throws: EncryptionError.wrongKey, "\(outcome)") {
                try StoreKeyFile.unlock(store: store.path, userKey: failing)
            }
            #expect(throws: EncryptionError.wrongKey, "\(outcome)") {
                try StoreKeyFile.unlock(store: store.path, userKey: TestKeys.passphrase("wrong"))
            }
            #expect(!FileManager.default.fileExists(atPath: store.file(StoreKeyFile.fileName + ".new")), "\(outcome)")
            // And the interrupted rekey can simply be run again.
            if !outcome.newKeyWorks {
                try rekey(store, old, new)
                #expect(try sameDataKey(created, StoreKeyFile.unlock(store: store.path, userKey: new)))
            }
        }
    }
}
