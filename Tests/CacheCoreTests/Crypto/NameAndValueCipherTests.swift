@testable import CacheCore
import Foundation
import Testing

/// Deterministic name encryption for index lookups, and randomized value encryption.
@Suite struct NameAndValueCipherTests {
    private let names = NameCipher(dataKey: .random())
    private let values = ValueCipher(dataKey: .random())

    private func name(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func equalNamesInOneScopeEncryptEquallySoLookupsStayEqualityMatches() throws {
        let first = try names.encrypt(name("report.pdf"), in: .directory(42))
        #expect(try names.encrypt(name("report.pdf"), in: .directory(42)) == first)
        #expect(try names.encrypt(name("report.pdf"), in: .directory(43)) != first)
        #expect(try names.encrypt(name("report.pdf"), in: .xattrs(of: 42)) != first)
        #expect(try names.encrypt(name("report.pdg"), in: .directory(42)) != first)
        #expect(try NameCipher(dataKey: .random()).encrypt(name("report.pdf"), in: .directory(42)) != first)
    }

    @Test func namesComeBackExactlyFromTheirScope() throws {
        let samples: [[UInt8]] = [name("a"), name("héllo wörld"), [0xff, 0xfe, 0x80, 0x00, 0x80], [UInt8](repeating: 0x80, count: 16),
                                  [UInt8](repeating: UInt8(ascii: "n"), count: 255), []]
        for sample in samples {
            let encrypted = try names.encrypt(sample, in: .directory(7))
            #expect(!encrypted.isEmpty && encrypted.count % 16 == 0)
            #expect(try names.decrypt(encrypted, in: .directory(7)) == Data(sample))
            #expect(throws: EncryptionError.tamperedValue) { try names.decrypt(encrypted, in: .directory(8)) }
            #expect(throws: EncryptionError.tamperedValue) { try names.decrypt(encrypted, in: .xattrs(of: 7)) }
        }
    }

    /// Lengths show only to the next multiple of 16 bytes.
    @Test func nameLengthsArePadded() throws {
        let short = try names.encrypt(name("a"), in: .directory(1))
        #expect(try names.encrypt(name("fifteen-chars!!"), in: .directory(1)).count == short.count)
        #expect(try names.encrypt(name("sixteen-chars!!!"), in: .directory(1)).count > short.count)
    }

    @Test func aChangedOrForeignNameFails() throws {
        let encrypted = try names.encrypt(name("secret"), in: .directory(3))
        var changed = encrypted
        changed[4] ^= 0x01
        let foreign = try NameCipher(dataKey: .random()).encrypt(name("secret"), in: .directory(3))
        for bad in [changed, encrypted.dropLast(), encrypted + [0], Data(), Data(name("secret")), foreign] {
            #expect(throws: EncryptionError.tamperedValue, "\(bad)") { try names.decrypt(bad, in: .directory(3)) }
        }
    }

    @Test func valuesAreRandomizedAndOpenOnlyInTheirContext() throws {
        let context = ValueCipher.Context.xattrValue(entry: 5, name: name("user.comment"))
        let value = name("the value")
        let first = try values.seal(value, for: context)
        let second = try values.seal(value, for: context)
        #expect(first != second)
        #expect(try values.open(first, for: context) == value)
        #expect(try values.open(second, for: context) == value)
        let others: [ValueCipher.Context] = [.xattrValue(entry: 6, name: name("user.comment")),
                                             .xattrValue(entry: 5, name: name("user.other")), .symlinkTarget(entry: 5)]
        for other in others {
            #expect(throws: EncryptionError.tamperedValue) { try values.open(first, for: other) }
        }
        var changed = first
        changed[changed.count - 1] ^= 1
        #expect(throws: EncryptionError.tamperedValue) { try values.open(changed, for: context) }
        #expect(throws: EncryptionError.tamperedValue) { try values.open(first.prefix(20), for: context) }
        #expect(throws: EncryptionError.tamperedValue) { try ValueCipher(dataKey: .random()).open(first, for: context) }
    }

    /// Each kind of context and each pool binds its own values.
    @Test func contextsDoNotOpenEachOthersValues() throws {
        let policy = try values.seal(name("https://example.com/"), for: .poolSettings(pool: 2))
        #expect(try values.open(policy, for: .poolSettings(pool: 2)) == name("https://example.com/"))
        for other: ValueCipher.Context in [.poolSettings(pool: 3), .eventPath, .symlinkTarget(entry: 2)] {
            #expect(throws: EncryptionError.tamperedValue) { try values.open(policy, for: other) }
        }
        let path = try values.seal(name("data/a"), for: .eventPath)
        #expect(throws: EncryptionError.tamperedValue) { try values.open(path, for: .poolSettings(pool: 0)) }
    }
}
