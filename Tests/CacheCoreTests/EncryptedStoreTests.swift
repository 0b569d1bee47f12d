@testable import CacheCore
import CacheModel
import CLinux
import Foundation
import Glibc
import Testing

/// An engine over an encrypted store: file bytes keep their meaning through writes,
/// truncates, fallocate and remounts, while the stored object files hold only ciphertext,
/// and damage to one stored block fails only the reads that touch it.
@Suite struct EncryptedStoreTests {
    private let store: TestStore
    private let encryption: StoreEncryption
    private let layout = BlockLayout()

    init() throws {
        store = try TestStore()
        encryption = try StoreKeyFile.create(inStore: store.path, userKey: TestKeys.random())
    }

    private func open() throws -> CacheEngine {
        try store.open(encryption: encryption)
    }

    private func randomBytes(_ count: Int, _ generator: inout SplitMix) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    private func objectBytes(_ id: EntryID) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: StoreLayout(root: store.path).objectPath(for: id))))
    }

    /// Rounds of random operations, each round a new mount of the store.
    @Test func randomWritesTruncatesAndFallocatesMatchAModelAcrossRemounts() throws {
        var generator = SplitMix(seed: 2121)
        var model: [UInt8] = []
        var id: EntryID?
        for round in 0..<6 {
            let engine = try open()
            defer { engine.shutdown() }
            #expect(engine.isEncrypted)
            let data = try engine.pool("data")
            let file = try id ?? engine.writeFile("model", in: data, content: [])
            id = file
            let handle = try engine.open(file, flags: O_RDWR)
            let starts = try engine.read(handle, offset: 0, size: model.count + 1) == model
            #expect(starts, "round \(round) starts as the last one ended")
            for step in 0..<80 {
                try randomStep(engine, file, handle, &model, &generator)
                #expect(try engine.getattr(file).size == Int64(model.count), "round \(round) step \(step)")
            }
            let ends = try engine.read(handle, offset: 0, size: model.count + 1) == model
            #expect(ends, "round \(round) ends with the model's bytes")
            try engine.flush(handle)
            engine.release(handle)
            engine.waitForIndex()
            #expect(try engine.text(data, "user.cache.usage") == String(model.count))
        }
        #expect(Int64(try objectBytes(try #require(id)).count) == layout.storedSize(plaintextSize: Int64(model.count)))
    }

    /// One random write, truncate, fallocate or read of `file`, done to `model` too.
    private func randomStep(_ engine: CacheEngine, _ file: EntryID, _ handle: UInt64, _ model: inout [UInt8],
                            _ generator: inout SplitMix) throws {
        let offset = Int.random(in: 0...(model.count + 3 * layout.blockSize), using: &generator)
        let length = Int.random(in: 1...(3 * layout.blockSize), using: &generator)
        let end = offset + length
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<4:
            let bytes = randomBytes(length, &generator)
            _ = try bytes.withUnsafeBytes { try engine.write(handle, offset: Int64(offset), bytes: $0) }
            if end > model.count { model += [UInt8](repeating: 0, count: end - model.count) }
            model.replaceSubrange(offset..<end, with: bytes)
        case 4:
            let size = Int.random(in: 0...(model.count + 2 * layout.blockSize), using: &generator)
            _ = try engine.setattr(file, changes: AttributeChanges(size: Int64(size)), handle: handle)
            model = size < model.count ? Array(model[0..<size]) : model + [UInt8](repeating: 0, count: size - model.count)
        case 5:
            try engine.fallocate(handle, mode: FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset: Int64(offset),
                                 length: Int64(length))
            if offset < model.count {
                let cut = min(end, model.count)
                model.replaceSubrange(offset..<cut, with: [UInt8](repeating: 0, count: cut - offset))
            }
        case 6:
            try engine.fallocate(handle, mode: FALLOC_FL_ZERO_RANGE, offset: Int64(offset), length: Int64(length))
            if end > model.count { model += [UInt8](repeating: 0, count: end - model.count) }
            model.replaceSubrange(offset..<end, with: [UInt8](repeating: 0, count: length))
        case 7:
            let keepsSize = Bool.random(using: &generator)
            try engine.fallocate(handle, mode: keepsSize ? FALLOC_FL_KEEP_SIZE : 0, offset: Int64(offset),
                                 length: Int64(length))
            if !keepsSize && end > model.count { model += [UInt8](repeating: 0, count: end - model.count) }
        default:
            let read = try engine.read(handle, offset: Int64(offset), size: length)
            let expected = offset < model.count ? Array(model[offset..<min(end, model.count)]) : []
            // Compared first: a failure prints the place, not kilobytes of bytes.
            let matches = read == expected
            #expect(matches, "read \(length) at \(offset)")
        }
    }

    @Test func sizesAllocationAndUsageArePlaintextFigures() throws {
        let engine = try open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("ten-thousand", in: data, content: [UInt8](repeating: 7, count: 10_000))
        engine.waitForIndex()
        let attributes = try engine.getattr(id)
        #expect(attributes.size == 10_000)
        // Three 4 KiB filesystem blocks, whatever the cipher block size: 24 units of 512 bytes.
        #expect(attributes.blocks == 24)
        #expect(try engine.text(data, "user.cache.usage") == "10000")
        #expect(try objectBytes(id).count == Int(layout.storedSize(plaintextSize: 10_000)))
    }

    @Test func storedObjectsHoldNoPlaintextAndReusedSparesReadRight() throws {
        let marker = Array("cachefs-encryption-marker-7f3a".utf8)
        let content = Array((0..<200).map { _ in marker }.joined())
        let (first, second): (EntryID, EntryID)
        do {
            let engine = try open()
            defer { engine.shutdown() }
            let data = try engine.pool("data")
            first = try engine.writeFile("first", in: data, content: content)
            try engine.unlink(parent: data, name: Array("first".utf8))
            engine.waitForIndex()
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.path + "/spares").count == 1)
            // The removed file's bytes became a spare, emptied: this create takes it.
            second = try engine.writeFile("second", in: data, content: content)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.path + "/spares").isEmpty)
            #expect(try engine.readAll(second) == content)
        }
        #expect(first != second)
        var raw: [UInt8] = []
        for name in store.objectFiles { raw += try objectBytes(try #require(EntryID(name.split(separator: "/")[1]))) }
        #expect(raw.count == Int(layout.storedSize(plaintextSize: Int64(content.count))))
        #expect(raw.firstRange(of: marker[0..<8]) == nil)
        let engine = try open()
        defer { engine.shutdown() }
        #expect(try engine.readAll(second) == content)
    }

    @Test func aFlippedByteFailsOnlyReadsOfItsBlock() throws {
        var generator = SplitMix(seed: 7)
        let content = randomBytes(5 * layout.blockSize, &generator)
        let id = try {
            let engine = try open()
            defer { engine.shutdown() }
            return try engine.writeFile("five-blocks", in: try engine.pool("data"), content: content)
        }()
        let path = StoreLayout(root: store.path).objectPath(for: id)
        let fd = Glibc.open(path, O_RDWR)
        try #require(fd >= 0)
        var byte: UInt8 = 0
        let at = off_t(layout.storedOffset(ofBlock: 2) + 100)
        #expect(Glibc.pread(fd, &byte, 1, at) == 1)
        byte ^= 0x40
        #expect(Glibc.pwrite(fd, &byte, 1, at) == 1)
        Glibc.close(fd)

        let engine = try open()
        defer { engine.shutdown() }
        let handle = try engine.open(id, flags: O_RDONLY)
        defer { engine.release(handle) }
        let block = layout.blockSize
        #expect(try engine.read(handle, offset: 0, size: 2 * block) == Array(content[0..<2 * block]))
        #expect(try engine.read(handle, offset: Int64(3 * block), size: 2 * block) == Array(content[(3 * block)...]))
        #expect(throws: CacheError.io(EIO)) { try engine.read(handle, offset: Int64(2 * block + 10), size: 1) }
        #expect(throws: CacheError.io(EIO)) { try engine.read(handle, offset: Int64(block), size: 2 * block) }
        let events = try String(contentsOfFile: store.path + "/events.jsonl", encoding: .utf8)
        #expect(events.contains("\"event\":\"tampered\""))
        #expect(events.contains("entry \(id)"))
        #expect(!events.contains("five-blocks"))
    }

    @Test func aCrashKeepsDurableData() throws {
        var generator = SplitMix(seed: 99)
        let content = randomBytes(3 * layout.blockSize + 123, &generator)
        let id: EntryID
        do {
            let engine = try open()
            let created = try engine.create(parent: try engine.pool("data"), name: Array("kept".utf8), mode: 0o644,
                                            flags: O_WRONLY, caller: tester)
            _ = try content.withUnsafeBytes { try engine.write(created.handle, offset: 0, bytes: $0) }
            try engine.fsync(created.handle, dataOnly: false)
            try engine.flush(created.handle)
            engine.release(created.handle)
            engine.waitForIndex()
            id = created.attributes.id
            engine.simulateCrash()
            _ = Unmanaged.passRetained(engine)
        }
        try store.releaseLockOfCrashedEngine()
        let engine = try open()
        defer { engine.shutdown() }
        #expect(try engine.getattr(id).size == Int64(content.count))
        #expect(try engine.readAll(id) == content)
    }
}
