@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Encrypted byte files through descriptors: random operations against a plain model, and
/// each kind of tampering with the stored bytes.
@Suite struct EncryptedFileTests {
    private let directory: ScratchDirectory
    private let encryption: StoreEncryption

    init() throws {
        directory = try ScratchDirectory()
        let key = TestKeys.random()
        encryption = try StoreKeyFile.create(inStore: directory.path, userKey: key, blockSize: 512)
    }

    /// A new encrypted file `name` of entry `owner`, its descriptor closed by `body`'s end.
    @discardableResult
    private func withFile<R>(_ name: String, owner: EntryID = 1, creating: Bool = true,
                             _ body: (EncryptedFile) throws -> R) throws -> R {
        let fd = open(directory.file(name), O_RDWR | (creating ? O_CREAT | O_EXCL : 0), 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        let file = creating ? try EncryptedFile.create(fd: fd, owner: owner, encryption: encryption)
            : try EncryptedFile.open(fd: fd, owner: owner, encryption: encryption)
        return try body(file)
    }

    private func randomBytes(_ count: Int, _ generator: inout SplitMix) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    @Test func randomWritesTruncatesAndReadsMatchAPlainModel() throws {
        var generator = SplitMix(seed: 21)
        let block = encryption.layout.blockSize
        var model: [UInt8] = []
        try withFile("model") { (file) throws in
            for step in 0..<1500 {
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<5:
                    let offset = Int.random(in: 0...(model.count + 2 * block), using: &generator)
                    let bytes = randomBytes(Int.random(in: 0...(3 * block), using: &generator), &generator)
                    try file.write(bytes, at: Int64(offset))
                    if !bytes.isEmpty {
                        if model.count < offset + bytes.count {
                            model += [UInt8](repeating: 0, count: offset + bytes.count - model.count)
                        }
                        model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
                    }
                case 5..<7:
                    let size = Int.random(in: 0...(model.count + 2 * block), using: &generator)
                    try file.truncate(to: Int64(size))
                    model = size < model.count ? Array(model[..<size]) : model + [UInt8](repeating: 0, count: size - model.count)
                default:
                    let offset = Int.random(in: 0...(model.count + 10), using: &generator)
                    let count = Int.random(in: 0...(2 * block + 10), using: &generator)
                    let expected = offset < model.count ? Array(model[offset..<min(model.count, offset + count)]) : []
                    #expect(try file.read(at: Int64(offset), count: count) == expected, "step \(step)")
                }
                #expect(try file.size() == Int64(model.count), "step \(step)")
                #expect(try PosixDisk().size(of: file.fd) == encryption.layout.storedSize(plaintextSize: Int64(model.count)))
            }
            #expect(try file.read(at: 0, count: model.count + 1) == model)
            #expect(try file.damagedBlocks().isEmpty)
        }
        // And a descriptor opened afresh reads the same through the header.
        try withFile("model", creating: false) { (file) throws in
            #expect(try file.read(at: 0, count: model.count) == model)
        }
    }

    /// Writes of many batches of blocks (each batch one pwrite): each block lands where it
    /// belongs, with a nonce of its own, and an overwrite across batches keeps the bytes
    /// around it.
    @Test func largeWritesOfManyBatchesReadBackWhole() throws {
        var generator = SplitMix(seed: 77)
        var model = randomBytes(1 << 20, &generator)
        try withFile("large") { file in
            try file.write(model, at: 0)
            let patch = randomBytes(600_001, &generator)
            try file.write(patch, at: 123_457)
            model.replaceSubrange(123_457..<123_457 + patch.count, with: patch)
            #expect(try file.size() == Int64(model.count))
            #expect(try file.read(at: 0, count: model.count) == model)
            #expect(try file.damagedBlocks() == [])
            // Every stored block's nonce (its first 12 bytes) is its own.
            let stored = try Data(contentsOf: URL(fileURLWithPath: directory.file("large")))
            let layout = encryption.layout
            let nonces = (0...layout.lastBlock(plaintextSize: Int64(model.count))).map { index -> Data in
                let start = Int(layout.storedOffset(ofBlock: index))
                return stored[start..<start + 12]
            }
            #expect(Set(nonces).count == nonces.count)
        }
    }

    @Test func aNewFileIsEmptyAndEvenItsLastBlockIsSealed() throws {
        try withFile("empty") { (file) throws in
            #expect(try file.size() == 0)
            #expect(try file.read(at: 0, count: 10) == [])
            #expect(try file.damagedBlocks().isEmpty)
        }
        // Cut down to its header, an empty file is not mistaken for another empty file.
        #expect(truncate(directory.file("empty"), off_t(FileHeader.byteCount)) == 0)
        try withFile("empty", creating: false) { (file) throws in
            #expect(throws: EncryptionError.badStoredSize(Int64(FileHeader.byteCount))) { try file.size() }
        }
    }

    @Test func aGrowWritesSealedZerosNotHoles() throws {
        try withFile("grown") { (file) throws in
            try file.write([1, 2, 3], at: 0)
            try file.truncate(to: 2000)
            #expect(try file.read(at: 0, count: 3000) == [1, 2, 3] + [UInt8](repeating: 0, count: 1997))
        }
        let stored = try directory.bytes(of: "grown")
        let block = encryption.layout.storedBlockSize
        // No stored block is all zeros: each is ciphertext.
        for start in stride(from: FileHeader.byteCount, to: stored.count, by: block) {
            #expect(stored[start..<min(stored.count, start + block)].contains { $0 != 0 })
        }
    }

    // MARK: - Tampering

    /// Four full blocks and a partial fifth, with distinct content per block.
    private func sample() -> [UInt8] {
        (0..<(4 * 512 + 100)).map { UInt8(truncatingIfNeeded: $0 / 512 * 37 + $0) }
    }

    private func writeSample(_ name: String, owner: EntryID = 1) throws {
        try withFile(name, owner: owner) { (file) throws in try file.write(sample(), at: 0) }
    }

    private func storedRange(ofBlock index: Int64) -> Range<Int> {
        let range = encryption.layout.storedRange(ofBlocks: index..<index + 1, plaintextSize: Int64(sample().count))
        return Int(range.lowerBound)..<Int(range.upperBound)
    }

    private func plaintextRange(ofBlock index: Int) -> (offset: Int64, count: Int) {
        (Int64(index * 512), index == 4 ? 100 : 512)
    }

    @Test func aFlippedByteFailsItsBlockOnlyAndTheRestStaysReadable() throws {
        try writeSample("flipped")
        var stored = try directory.bytes(of: "flipped")
        stored[storedRange(ofBlock: 2).lowerBound + 40] ^= 0x01
        try directory.write(stored, to: "flipped")
        try withFile("flipped", creating: false) { (file) throws in
            let range = plaintextRange(ofBlock: 2)
            #expect(throws: EncryptionError.tampered(block: 2)) { try file.read(at: range.offset + 10, count: 1) }
            #expect(throws: EncryptionError.tampered(block: 2)) { try file.read(at: 0, count: 5000) }
            for index in [0, 1, 3, 4] {
                let range = plaintextRange(ofBlock: index)
                let expected = Array(sample()[Int(range.offset)..<Int(range.offset) + range.count])
                #expect(try file.read(at: range.offset, count: range.count) == expected)
            }
            #expect(try file.damagedBlocks() == [2])
            // A write that must keep part of the damaged block refuses too.
            #expect(throws: EncryptionError.tampered(block: 2)) { try file.write([9], at: range.offset + 1) }
        }
    }

    /// Whole byte files swapped between two entries, headers included: both fail.
    @Test func swappedFilesBothFail() throws {
        try writeSample("first", owner: 1)
        try writeSample("second", owner: 2)
        let (first, second) = (try directory.bytes(of: "first"), try directory.bytes(of: "second"))
        try directory.write(second, to: "first")
        try directory.write(first, to: "second")
        for (name, owner) in [("first", EntryID(1)), ("second", EntryID(2))] {
            try withFile(name, owner: owner, creating: false) { (file) throws in
                #expect(throws: EncryptionError.tampered(block: 0)) { try file.read(at: 0, count: 10) }
                #expect(try file.damagedBlocks() == [0, 1, 2, 3, 4])
            }
        }
    }

    @Test func aFileCutByOneBlockFailsAtItsNewLastBlock() throws {
        try withFile("cut") { (file) throws in try file.write(Array(sample()[..<2048]), at: 0) }
        let stored = try directory.bytes(of: "cut")
        try directory.write(Array(stored.dropLast(encryption.layout.storedBlockSize)), to: "cut")
        try withFile("cut", creating: false) { (file) throws in
            #expect(try file.size() == 1536)
            #expect(try file.read(at: 0, count: 1024) == Array(sample()[..<1024]))
            #expect(throws: EncryptionError.tampered(block: 2)) { try file.read(at: 0, count: 2048) }
            #expect(try file.damagedBlocks() == [2])
        }
        // Cut mid-block, the stored size itself gives it away.
        try directory.write(Array(stored.dropLast(100)), to: "cut")
        try withFile("cut", creating: false) { (file) throws in
            #expect(throws: EncryptionError.tampered(block: 3)) { try file.read(at: 0, count: 2048) }
        }
    }

    @Test func anAppendedBlockFails() throws {
        try withFile("appended") { (file) throws in try file.write(Array(sample()[..<2048]), at: 0) }
        let stored = try directory.bytes(of: "appended")
        let copy = Array(stored[storedRange(ofBlock: 1)])
        try directory.write(stored + copy, to: "appended")
        try withFile("appended", creating: false) { (file) throws in
            #expect(try file.size() == 2560)
            #expect(throws: EncryptionError.tampered(block: 3)) { try file.read(at: 0, count: 4096) }
            #expect(try file.damagedBlocks() == [3, 4])
            #expect(try file.damagedBlocks(lastOnly: true) == [4])
        }
    }

    @Test func aBlockReplacedByAnotherOfTheSameFileFails() throws {
        try writeSample("moved")
        var stored = try directory.bytes(of: "moved")
        stored.replaceSubrange(storedRange(ofBlock: 3), with: stored[storedRange(ofBlock: 1)])
        try directory.write(stored, to: "moved")
        try withFile("moved", creating: false) { (file) throws in
            #expect(throws: EncryptionError.tampered(block: 3)) { try file.read(at: 3 * 512, count: 1) }
            #expect(try file.read(at: 512, count: 512) == Array(sample()[512..<1024]))
            #expect(try file.damagedBlocks() == [3])
            // The cheap check reads only the last block, which is whole.
            #expect(try file.damagedBlocks(lastOnly: true).isEmpty)
        }
    }

    @Test func aZeroedBlockFailsAndAChangedHeaderFailsEveryBlock() throws {
        try writeSample("zeroed")
        var stored = try directory.bytes(of: "zeroed")
        let original = stored
        stored.replaceSubrange(storedRange(ofBlock: 1), with: [UInt8](repeating: 0, count: storedRange(ofBlock: 1).count))
        try directory.write(stored, to: "zeroed")
        try withFile("zeroed", creating: false) { (file) throws in #expect(try file.damagedBlocks() == [1]) }

        var header = original
        header[20] ^= 0x01
        try directory.write(header, to: "zeroed")
        try withFile("zeroed", creating: false) { (file) throws in #expect(try file.damagedBlocks() == [0, 1, 2, 3, 4]) }
    }
}
