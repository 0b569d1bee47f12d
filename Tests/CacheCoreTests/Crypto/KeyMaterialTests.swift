@testable import CacheCore
import Foundation
import Glibc
import Testing

/// A user key from a key file or passphrase, and key files on disk.
@Suite struct KeyMaterialTests {
    private func content(_ bytes: [UInt8]) -> SecretBytes { SecretBytes(copying: bytes) }

    private func passphraseBytes(_ key: UserKey) -> [UInt8]? {
        guard case .passphrase(let secret) = key else { return nil }
        return secret.withUnsafeBytes { Array($0) }
    }

    @Test func exactly32BytesAreARandomKeyAndAnythingElseAPassphrase() throws {
        let random = try UserKey(keyFileContent: content([UInt8](repeating: 7, count: 32)))
        guard case .random = random else { Issue.record("32 bytes were not taken as a random key"); return }
        #expect(passphraseBytes(try UserKey(keyFileContent: content(Array("hunter2\n".utf8)))) == Array("hunter2".utf8))
        #expect(passphraseBytes(try UserKey(keyFileContent: content(Array("hunter2\r\n".utf8)))) == Array("hunter2".utf8))
        // Only one line ending goes; inner ones and spaces stay.
        #expect(passphraseBytes(try UserKey(keyFileContent: content(Array(" a\nb \n\n".utf8)))) == Array(" a\nb \n".utf8))
        // 32 characters and a newline are a passphrase of 32 characters.
        let thirtyTwo = [UInt8](repeating: UInt8(ascii: "x"), count: 32)
        #expect(passphraseBytes(try UserKey(keyFileContent: content(thirtyTwo + [10]))) == thirtyTwo)
    }

    @Test func anEmptyPassphraseIsRefused() throws {
        #expect(throws: EncryptionError.emptyPassphrase) { try UserKey(keyFileContent: content([])) }
        #expect(throws: EncryptionError.emptyPassphrase) { try UserKey(keyFileContent: content([10])) }
    }

    /// RFC 7914 §12's second vector, through the same call a store's unlock makes.
    @Test func scryptIsWiredAsRFC7914Says() throws {
        let key = try TestKeys.passphrase("password")
        let derivation = KeyDerivation(kind: .scrypt, logRounds: 10, blockSize: 8, parallelism: 16, salt: Array("NaCl".utf8))
        let derived = try derivation.wrappingKey(for: key).withUnsafeBytes { Array($0) }
        let expected = "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
        #expect(derived.map { String(format: "%02x", $0) }.joined() == expected)
    }

    @Test func aPassphraseNeverUnlocksAsARandomKeyOrTheReverse() throws {
        let passphrase = try TestKeys.passphrase("secret")
        let derivation = KeyDerivation.fresh(for: TestKeys.random())
        #expect(throws: EncryptionError.wrongKey) { try derivation.wrappingKey(for: passphrase) }
    }

    @Test func keygenWritesThirtyTwoPrivateBytesAndNeverOverwrites() throws {
        let directory = try ScratchDirectory()
        let path = directory.file("new.key")
        try KeyFile.createRandom(at: path)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(info.st_size == 32)
        let first = try directory.bytes(of: "new.key")
        #expect(throws: EncryptionError.keyFileExists(path: path)) { try KeyFile.createRandom(at: path) }
        #expect(try directory.bytes(of: "new.key") == first)
        let other = directory.file("other.key")
        try KeyFile.createRandom(at: other)
        #expect(try directory.bytes(of: "other.key") != first)
        guard case .random = try UserKey(keyFileContent: KeyFile.read(path)) else {
            Issue.record("a keygen file did not read as a random key")
            return
        }
    }

    /// A key file whose write failed goes, since a part of a key would read as a passphrase;
    /// when it cannot go, the error says it is still there.
    @Test func aKeyFileWhoseWriteFailedIsRemovedOrSaidToRemain() throws {
        let directory = try ScratchDirectory()
        let disk = FaultyDisk()
        disk.failWrites.withLock { $0 = EIO }
        let removed = directory.file("removed.key")
        #expect(throws: EncryptionError.io(operation: "write \(removed)", errno: EIO)) {
            try KeyFile.createRandom(at: removed, disk: disk)
        }
        #expect(!FileManager.default.fileExists(atPath: removed))
        let kept = directory.file("kept.key")
        disk.failUnlinks.withLock { $0 = [kept: EACCES] }
        let left = "the partial file is left: it could not be removed: \(String(cString: strerror(EACCES)))"
        #expect(throws: EncryptionError.io(operation: "write \(kept) (\(left))", errno: EIO)) {
            try KeyFile.createRandom(at: kept, disk: disk)
        }
    }

    @Test func unreadableAndOversizedKeyFilesSayWhich() throws {
        let directory = try ScratchDirectory()
        let missing = directory.file("missing")
        #expect(throws: EncryptionError.keyFileUnreadable(path: missing, errno: ENOENT)) { try KeyFile.read(missing) }
        try directory.write([UInt8](repeating: 65, count: KeyFile.maximumByteCount + 1), to: "huge")
        #expect(throws: EncryptionError.keyFileTooLarge(path: directory.file("huge"))) {
            try KeyFile.read(directory.file("huge"))
        }
        try directory.write([UInt8](repeating: 65, count: KeyFile.maximumByteCount), to: "large")
        #expect(try KeyFile.read(directory.file("large")).count == KeyFile.maximumByteCount)
    }

    @Test func errorsReadAsOneLine() {
        let errors: [EncryptionError] = [.noKey, .wrongKey, .keyFileExists(path: "/k"), .tampered(block: 3),
                                         .storeKeyFileCorrupt(path: "/s/wrapped-key", reason: "its checksum does not match"),
                                         .keyFileUnreadable(path: "/k", errno: ENOENT), .notEncrypted(store: "/s")]
        for error in errors {
            #expect(!error.description.isEmpty && !error.description.contains("\n"), "\(error)")
        }
        #expect(EncryptionError.noKey.description
            == "no key: give -o key_file=PATH, a systemd credential cachefs.key, or run on a terminal")
        #expect(EncryptionError.tampered(block: 1).errno == EIO)
        #expect(EncryptionError.io(operation: "x", errno: ENOSPC).errno == ENOSPC)
    }
}
