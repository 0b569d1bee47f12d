@testable import CacheCore
import CacheModel
import Testing

/// One block's seal and open, and everything that must make an open fail.
@Suite struct FileCipherTests {
    private let dataKey = DataKey.random()
    private let layout = BlockLayout()

    private func cipher(owner: EntryID = 7, header: FileHeader? = nil, dataKey: DataKey? = nil) -> FileCipher {
        FileCipher(dataKey: dataKey ?? self.dataKey, header: header ?? .random(blockSize: 4096), owner: owner)
    }

    private func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    @Test func blocksOfEverySizeOpenToTheirPlaintext() throws {
        let file = cipher()
        for count in [0, 1, 15, 16, 17, 4095, 4096] {
            let plaintext = bytes(count, seed: UInt64(count))
            let stored = try file.seal(block: 3, plaintext, isLast: true)
            #expect(stored.count == count + BlockLayout.overhead)
            #expect(try file.open(block: 3, stored, isLast: true) == plaintext)
        }
    }

    /// A rewrite in place takes a fresh nonce: the same plaintext never seals the same way.
    @Test func resealingTheSameBlockUsesAFreshNonce() throws {
        let file = cipher()
        let plaintext = bytes(4096, seed: 1)
        let first = try file.seal(block: 0, plaintext, isLast: false)
        let second = try file.seal(block: 0, plaintext, isLast: false)
        #expect(first.prefix(BlockLayout.nonceSize) != second.prefix(BlockLayout.nonceSize))
        #expect(first != second)
        #expect(try file.open(block: 0, second, isLast: false) == plaintext)
    }

    @Test func anyChangedByteFailsOnlyAsThatBlock() throws {
        let file = cipher()
        let stored = try file.seal(block: 5, bytes(100, seed: 2), isLast: true)
        for position in [0, 11, 12, 60, stored.count - 17, stored.count - 1] {
            var changed = stored
            changed[position] ^= 0x40
            #expect(throws: EncryptionError.tampered(block: 5)) { try file.open(block: 5, changed, isLast: true) }
        }
        #expect(throws: EncryptionError.tampered(block: 5)) { try file.open(block: 5, stored.dropLast(), isLast: true) }
        #expect(throws: EncryptionError.tampered(block: 5)) { try file.open(block: 5, stored + [0], isLast: true) }
        #expect(throws: EncryptionError.tampered(block: 5)) { try file.open(block: 5, stored.prefix(27), isLast: true) }
    }

    @Test func aBlockOpensOnlyAtItsPositionWithItsLastFlagInItsFile() throws {
        let header = FileHeader.random(blockSize: 4096)
        let file = cipher(owner: 7, header: header)
        let stored = try file.seal(block: 2, bytes(4096, seed: 3), isLast: false)
        #expect(throws: EncryptionError.tampered(block: 3)) { try file.open(block: 3, stored, isLast: false) }
        #expect(throws: EncryptionError.tampered(block: 2)) { try file.open(block: 2, stored, isLast: true) }
        #expect(throws: EncryptionError.tampered(block: 2)) { try cipher(owner: 7).open(block: 2, stored, isLast: false) }
        #expect(throws: EncryptionError.tampered(block: 2)) {
            try cipher(owner: 8, header: header).open(block: 2, stored, isLast: false)
        }
        #expect(throws: EncryptionError.tampered(block: 2)) {
            try cipher(owner: 7, header: header, dataKey: .random()).open(block: 2, stored, isLast: false)
        }
        #expect(try cipher(owner: 7, header: header).open(block: 2, stored, isLast: false) == bytes(4096, seed: 3))
    }

    /// Ciphertext has no holes: an all-zero stored block is tampering, not a block of zeros.
    @Test func anAllZeroStoredBlockNeverOpens() throws {
        let file = cipher()
        for count in [BlockLayout.overhead, BlockLayout.overhead + 100, layout.storedBlockSize] {
            for isLast in [false, true] {
                #expect(throws: EncryptionError.tampered(block: 0)) {
                    try file.open(block: 0, [UInt8](repeating: 0, count: count), isLast: isLast)
                }
            }
        }
    }

    @Test func theHeaderRoundTripsAndRejectsWhatIsNotOne() throws {
        let header = FileHeader.random(blockSize: 16384)
        #expect(header.encoded.count == FileHeader.byteCount)
        #expect(try FileHeader(decoding: header.encoded) == header)
        #expect(FileHeader.random(blockSize: 4096).fileID != FileHeader.random(blockSize: 4096).fileID)
        var plain = header.encoded
        plain[0] = UInt8(ascii: "X")
        #expect(throws: EncryptionError.badFileHeader(reason: "not an encrypted cachefs file")) {
            try FileHeader(decoding: plain)
        }
        var badSize = header.encoded
        badSize[5] = 40
        #expect(throws: EncryptionError.badFileHeader(reason: "bad block size 2^40")) { try FileHeader(decoding: badSize) }
        #expect(throws: EncryptionError.badFileHeader(reason: "not an encrypted cachefs file")) {
            try FileHeader(decoding: header.encoded.dropLast())
        }
    }
}
