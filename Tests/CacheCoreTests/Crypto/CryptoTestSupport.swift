@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization

/// A temporary directory removed when the value goes away.
final class ScratchDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-crypto-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: file(name)))
    }

    func bytes(of name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: file(name))))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The namespace model's seeded generator, for the standard library's `random(in:using:)`.
extension SplitMix: RandomNumberGenerator {}

enum TestKeys {
    static func random() -> UserKey { .newRandom() }

    static func passphrase(_ text: String) throws -> UserKey {
        try UserKey(passphrase: SecretBytes(copying: Array(text.utf8)))
    }

    /// scrypt at N = 2^10 keeps a test fast; the format is the same.
    static func cheapDerivation(for key: UserKey) -> KeyDerivation {
        .fresh(for: key, scryptLogRounds: 10, scryptBlockSize: 8, scryptParallelism: 1)
    }
}

/// Whether two unlocked stores hold the same data key: deterministic name encryption under
/// each must agree.
func sameDataKey(_ a: StoreEncryption, _ b: StoreEncryption) throws -> Bool {
    try a.names.encrypt(Array("probe".utf8), in: .directory(1)) == b.names.encrypt(Array("probe".utf8), in: .directory(1))
}

/// A prompt that answers with the given lines, one per call, and counts the calls.
final class ScriptedPrompt: PassphrasePrompt {
    let isInteractive: Bool
    private let answers: Mutex<[String]>
    let prompts = Mutex<[String]>([])

    init(interactive: Bool, answers: [String] = []) {
        isInteractive = interactive
        self.answers = Mutex(answers)
    }

    func readPassphrase(prompt: String) throws(EncryptionError) -> SecretBytes {
        prompts.withLock { $0.append(prompt) }
        let answer = answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        guard let answer else { throw .io(operation: "read the passphrase", errno: EIO) }
        return SecretBytes(copying: Array(answer.utf8))
    }
}

/// The real disk until the `failAt`-th change (write, fsync, rename): that call and every
/// later one fail, as if the machine stopped there. A failed write may first write half its
/// bytes (`tearing`), as a torn write would.
final class StoppingDisk: Disk {
    private let real = PosixDisk()
    private let failAt: Int
    private let tearing: Bool
    private let changes = Mutex(0)

    init(failAt: Int, tearing: Bool = false) {
        self.failAt = failAt
        self.tearing = tearing
    }

    /// Counts a change; true when it must not happen.
    private func stops() -> Bool {
        changes.withLock { count in
            count += 1
            return count >= failAt
        }
    }

    var changesSeen: Int { changes.withLock { $0 } }

    func open(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32 {
        try real.open(path, flags: flags, mode: mode)
    }
    func close(_ fd: Int32) { real.close(fd) }
    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        try real.pread(fd, into: buffer, at: offset)
    }
    func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        if stops() {
            if tearing { _ = try real.pwrite(fd, from: UnsafeRawBufferPointer(rebasing: buffer[..<(buffer.count / 2)]), at: offset) }
            throw .io(EIO)
        }
        return try real.pwrite(fd, from: buffer, at: offset)
    }
    func ftruncate(_ fd: Int32, length: Int64) throws(CacheError) { try real.ftruncate(fd, length: length) }
    func fsync(_ fd: Int32, dataOnly: Bool) throws(CacheError) {
        if stops() { throw .io(EIO) }
        try real.fsync(fd, dataOnly: dataOnly)
    }
    func truncate(_ path: String, length: Int64) throws(CacheError) { try real.truncate(path, length: length) }
    func unlink(_ path: String) throws(CacheError) { try real.unlink(path) }
    func rename(_ path: String, to newPath: String) throws(CacheError) {
        if stops() { throw .io(EIO) }
        try real.rename(path, to: newPath)
    }
    func mkdir(_ path: String, mode: mode_t) throws(CacheError) { try real.mkdir(path, mode: mode) }
    func fileSize(_ path: String) throws(CacheError) -> Int64 { try real.fileSize(path) }
    func allocatedBlocks(_ fd: Int32) throws(CacheError) -> Int64 { try real.allocatedBlocks(fd) }
    func sizeForParts(_ fd: Int32, to length: Int64) throws(CacheError) {
        try real.sizeForParts(fd, to: length)
    }
    func discardPart(_ fd: Int32, offset: Int64, length: Int64) throws(CacheError) {
        try real.discardPart(fd, offset: offset, length: length)
    }
    func fallocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64) throws(CacheError) {
        try real.fallocate(fd, mode: mode, offset: offset, length: length)
    }
    func statvfs(_ path: String) throws(CacheError) -> Glibc.statvfs { try real.statvfs(path) }
    func syncFilesystem(_ path: String) throws(CacheError) { try real.syncFilesystem(path) }
}
