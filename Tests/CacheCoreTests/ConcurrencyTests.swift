@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

@Suite struct ConcurrencyTests {
    /// Metadata changes (pin toggles, chmod) racing with writes must never lose the
    /// writes' growth: usage and the recorded size stay equal to the bytes written.
    @Test func metadataChangesNeverLoseAConcurrentWritesGrowth() throws {
        let store = try TestStore()
        let (id, size) = try writeWhileToggling(store)
        let reopened = try store.open()
        defer { reopened.shutdown() }
        #expect(try reopened.getattr(id).size == size)
    }

    static let writes = 4000

    /// A directory's persistent flag flipping while a file beneath it grows: the pool's
    /// figures must still add up to the file's size, in the category of its final state.
    @Test func directoryFlagChangesNeverLoseAConcurrentWritesGrowth() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        try engine.setxattr(data, name: "user.cache.max_size", value: Array("0".utf8), flags: 0)
        let directory = try engine.mkdir(parent: data, name: Array("d".utf8), mode: 0o755, caller: tester).id
        let created = try engine.create(parent: directory, name: Array("growing".utf8), mode: 0o644,
                                        flags: O_WRONLY, caller: tester)
        let chunk = [UInt8](repeating: 7, count: 512)
        let failedToggles = Mutex(0)
        let toggler = Thread {
            for round in 0..<400 {
                do {
                    try engine.setxattr(directory, name: "user.cache.persistent",
                                        value: Array((round % 2 == 0 ? "1" : "0").utf8), flags: 0)
                } catch {
                    failedToggles.withLock { $0 += 1 }
                }
            }
        }
        toggler.start()
        // Writes go on for as long as the flips do, so the two really overlap.
        var written = 0
        while written < Self.writes || toggler.isExecuting || !toggler.isFinished {
            _ = try chunk.withUnsafeBytes { try engine.write(created.handle, offset: Int64(written * 512), bytes: $0) }
            written += 1
        }
        try engine.flush(created.handle)
        engine.release(created.handle)
        let size = String(written * 512)
        let state = try engine.text(created.attributes.id, "user.cache.state")
        #expect(try engine.text(data, "user.cache.usage") == (state == "persistent" ? "0" : size))
        #expect(try engine.text(data, "user.cache.persistent_usage") == (state == "persistent" ? size : "0"))
        #expect(failedToggles.withLock { $0 } == 0)
    }

    /// A file removed between the kernel's lookup and its OPEN answers ESTALE, never
    /// ENOENT: the kernel then looks the name up again, and `open(O_CREAT)` creates it.
    @Test(arguments: [O_RDONLY, O_WRONLY | O_TRUNC])
    func anOpenRacingARemovalAnswersStale(flags: Int32) throws {
        let store = try TestStore()
        let disk = FaultyDisk()
        let engine = try store.open(disk: disk)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let id = try engine.writeFile("raced", in: data, content: [1, 2, 3])
        disk.beforeNextOpen.withLock { hook in
            hook = { try? engine.unlink(parent: data, name: Array("raced".utf8)) }
        }
        #expect(throws: CacheError.stale) { try engine.open(id, flags: flags) }
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("raced".utf8)) }
        #expect(try engine.text(data, "user.cache.usage") == "0")
        engine.waitForIndex()
        #expect(store.objectFiles.isEmpty)
    }

    /// Returns the file and the bytes written to it.
    private func writeWhileToggling(_ store: TestStore) throws -> (EntryID, Int64) {
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let created = try engine.create(parent: data, name: Array("busy".utf8), mode: 0o644, flags: O_WRONLY,
                                        caller: tester)
        let id = created.attributes.id
        let chunk = [UInt8](repeating: 7, count: 512)
        let failedToggles = Mutex(0)
        let toggler = Thread {
            for round in 0..<2000 {
                do {
                    try engine.setxattr(id, name: "user.cache.pinned", value: Array((round % 2 == 0 ? "1" : "0").utf8),
                                        flags: 0)
                    _ = try engine.setattr(id, changes: AttributeChanges(permissions: round % 2 == 0 ? 0o600 : 0o644),
                                           handle: nil)
                } catch {
                    failedToggles.withLock { $0 += 1 }
                }
            }
        }
        toggler.start()
        // Writes go on for as long as the toggles do, so the two really overlap.
        var written = 0
        while written < Self.writes || toggler.isExecuting || !toggler.isFinished {
            _ = try chunk.withUnsafeBytes { try engine.write(created.handle, offset: Int64(written * 512), bytes: $0) }
            written += 1
        }
        try engine.flush(created.handle)
        engine.release(created.handle)
        let size = Int64(written * 512)
        #expect(try engine.getattr(id).size == size)
        #expect(try engine.text(data, "user.cache.usage") == String(size))
        #expect(failedToggles.withLock { $0 } == 0, "every toggle must have happened")
        return (id, size)
    }
}
