import CacheModel
import CacheNames
import Glibc
@testable import CacheCore
import Foundation
import Synchronization

/// A store in a fresh temporary directory, removed when the value goes away.
final class TestStore {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("cachefs-unit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// With `waitingForLock`, first waits for a lock an earlier engine of the test let go of
    /// (see `waitUntilUnlocked`).
    func open(clock: ManualClock = ManualClock(), disk: any Disk = PosixDisk(),
              overrides: [PoolOverride] = [], commitWindow: Double = 0.005,
              waitingForLock: Bool = true, encryption: StoreEncryption? = nil,
              directorySource: (@Sendable (IndexDatabase) -> any DirectorySource)? = nil,
              memoryBudget: MemoryBudget = MemoryBudget()) throws -> CacheEngine {
        if waitingForLock && FileManager.default.fileExists(atPath: path + "/lock") { try Self.waitUntilUnlocked(path) }
        var configuration = EngineConfiguration(storePath: path, poolOverrides: overrides, clock: clock, disk: disk,
                                                accessFlushSeconds: 3600, commitWindowSeconds: commitWindow)
        configuration.encryption = encryption
        configuration.memoryBudget = memoryBudget
        if let directorySource { configuration.directorySource = directorySource }
        return try CacheEngine(configuration)
    }

    /// Lets the next `open` take the store, as a new process would after a crash.
    func releaseLockOfCrashedEngine() throws {
        try FileManager.default.removeItem(atPath: path + "/lock")
    }

    /// Waits (up to 5 s) until no descriptor holds the store's lock. A process another test
    /// spawns holds a copy of every descriptor until it execs (O_CLOEXEC acts only then), so
    /// a lock can outlive the engine that closed it by a moment.
    static func waitUntilUnlocked(_ path: String) throws {
        let deadline = Date(timeIntervalSinceNow: 5)
        while true {
            do {
                _ = try StoreLock(layout: StoreLayout(root: path))
                return
            } catch where Date() < deadline {
                usleep(10_000)
            }
        }
    }

    var objectFiles: [String] {
        let enumerator = FileManager.default.enumerator(atPath: path + "/objects")
        return (enumerator?.allObjects as? [String] ?? []).filter { $0.split(separator: "/").count == 2 }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A clock moved by hand.
final class ManualClock: WallClock {
    private let current = Mutex(Timestamp(seconds: 1_800_000_000, nanoseconds: 0))

    func now() -> Timestamp { current.withLock { $0 } }

    func advance(seconds: Int64) {
        advance(nanoseconds: seconds * 1_000_000_000)
    }

    func advance(nanoseconds: Int64) {
        current.withLock { $0 = Timestamp(nanoseconds: $0.nanoseconds + nanoseconds) }
    }
}

/// The real disk, but a chosen syscall fails with a chosen errno while `failing` is set.
final class FaultyDisk: Disk {
    private let real = PosixDisk()
    let failWrites = Mutex<Int32?>(nil)
    /// Runs once, at the next `open`, before the real call: a race made to order.
    let beforeNextOpen = Mutex<(@Sendable () -> Void)?>(nil)
    /// Paths whose `fileSize` fails, with the errno it fails with.
    let failFileSizes = Mutex<[String: Int32]>([:])
    /// Folders whose listing fails, with the errno it fails with.
    let failListings = Mutex<[String: Int32]>([:])
    /// Paths whose `unlink` fails, with the errno it fails with.
    let failUnlinks = Mutex<[String: Int32]>([:])
    /// Paths whose next `open` fails (once), with the errno it fails with.
    let failNextOpens = Mutex<[String: Int32]>([:])

    func open(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32 {
        let hook = beforeNextOpen.withLock { hook in
            defer { hook = nil }
            return hook
        }
        hook?()
        if let failure = failNextOpens.withLock({ $0.removeValue(forKey: path) }) { throw CacheError.io(failure) }
        return try real.open(path, flags: flags, mode: mode)
    }
    func close(_ fd: Int32) { real.close(fd) }
    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        try real.pread(fd, into: buffer, at: offset)
    }
    func pwrite(_ fd: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        if let code = failWrites.withLock({ $0 }) { throw .io(code) }
        return try real.pwrite(fd, from: buffer, at: offset)
    }
    func ftruncate(_ fd: Int32, length: Int64) throws(CacheError) { try real.ftruncate(fd, length: length) }
    func fsync(_ fd: Int32, dataOnly: Bool) throws(CacheError) { try real.fsync(fd, dataOnly: dataOnly) }
    func truncate(_ path: String, length: Int64) throws(CacheError) { try real.truncate(path, length: length) }
    func unlink(_ path: String) throws(CacheError) {
        if let code = failUnlinks.withLock({ $0[path] }) { throw .io(code) }
        try real.unlink(path)
    }
    func rename(_ path: String, to newPath: String) throws(CacheError) { try real.rename(path, to: newPath) }
    func mkdir(_ path: String, mode: mode_t) throws(CacheError) { try real.mkdir(path, mode: mode) }
    func fileSize(_ path: String) throws(CacheError) -> Int64 {
        if let code = failFileSizes.withLock({ $0[path] }) { throw .io(code) }
        return try real.fileSize(path)
    }
    func allocatedBlocks(_ fd: Int32) throws(CacheError) -> Int64 { try real.allocatedBlocks(fd) }
    func sizeForParts(_ fd: Int32, to length: Int64) throws(CacheError) {
        if let code = failWrites.withLock({ $0 }) { throw .io(code) }
        try real.sizeForParts(fd, to: length)
    }
    func discardPart(_ fd: Int32, offset: Int64, length: Int64) throws(CacheError) {
        try real.discardPart(fd, offset: offset, length: length)
    }
    func fallocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64) throws(CacheError) {
        if let code = failWrites.withLock({ $0 }) { throw .io(code) }
        try real.fallocate(fd, mode: mode, offset: offset, length: length)
    }
    func statvfs(_ path: String) throws(CacheError) -> Glibc.statvfs { try real.statvfs(path) }
    func syncFilesystem(_ path: String) throws(CacheError) { try real.syncFilesystem(path) }
    func contentsOfDirectory(_ path: String) throws(CacheError) -> [String] {
        if let code = failListings.withLock({ $0[path] }) { throw .io(code) }
        return try real.contentsOfDirectory(path)
    }
}

let tester = Caller(uid: 1000, gid: 1000, pid: 1)

extension CacheEngine {
    /// The id of a default pool by name.
    func pool(_ name: String) throws -> EntryID {
        try lookup(parent: WellKnownEntry.root, name: Array(name.utf8)).id
    }

    /// Creates a file with `content`, closed, and forgotten by the kernel (as after its
    /// inode left the kernel's cache), so nothing but the tests' own lookups holds it.
    @discardableResult
    func writeFile(_ name: String, in parent: EntryID, content: [UInt8]) throws -> EntryID {
        let created = try create(parent: parent, name: Array(name.utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        _ = try content.withUnsafeBytes { try write(created.handle, offset: 0, bytes: $0) }
        try flush(created.handle)
        release(created.handle)
        forget(created.attributes.id, count: 1)
        return created.attributes.id
    }

    func readAll(_ id: EntryID) throws -> [UInt8] {
        let handle = try open(id, flags: O_RDONLY)
        defer { release(handle) }
        return try read(handle, offset: 0, size: 1 << 24)
    }

    func text(_ id: EntryID, _ name: String) throws -> String {
        String(decoding: try getxattr(id, name: name), as: UTF8.self)
    }
}
