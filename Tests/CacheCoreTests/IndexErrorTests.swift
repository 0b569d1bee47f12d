@testable import CacheCore
import CacheModel
import GRDB
import Glibc
import Testing

/// A value read from the index that the index cannot give answers EIO: a zero or an empty
/// value would look true.
@Suite struct IndexErrorTests {
    /// Renames `table` away with a second connection for the span of `body`.
    private func withTableAway(_ table: String, in store: TestStore, _ body: () throws -> Void) throws {
        // A second writer beside the engine's waits for the write lock as SQLite's busy timeout lets it.
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let outside = try DatabaseQueue(path: StoreLayout(root: store.path).indexPath, configuration: configuration)
        try outside.write { try $0.execute(sql: "ALTER TABLE \(table) RENAME TO \(table)_away") }
        defer { _ = Result { try outside.write { try $0.execute(sql: "ALTER TABLE \(table)_away RENAME TO \(table)") } } }
        try body()
    }

    private func errno(of body: () throws -> String) -> Int32? {
        do {
            _ = try body()
            return nil
        } catch {
            return CacheError.errno(for: error)
        }
    }

    @Test func pinnedFilesThatTheIndexCannotCountAreEIO() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let file = try engine.writeFile("f", in: data, content: Array("x".utf8))
        try engine.setxattr(file, name: "user.cache.pinned", value: Array("2h".utf8), flags: 0)
        engine.waitForIndex()
        #expect(try engine.text(data, "user.cache.pinned_files") == "1")
        try withTableAway("entry", in: store) {
            #expect(errno { try engine.text(data, "user.cache.pinned_files") } == EIO)
            #expect(errno { try engine.text(WellKnownEntry.root, "user.cache.pinned_files") } == EIO)
        }
        #expect(try engine.text(data, "user.cache.pinned_files") == "1")
    }

    @Test func anOriginVersionThatTheIndexCannotReadIsEIO() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let file = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        engine.waitForIndex()
        #expect(try engine.text(file, "user.cache.etag") == "")
        try withTableAway("xattr", in: store) {
            #expect(errno { try engine.text(file, "user.cache.etag") } == EIO)
            #expect(errno { try engine.text(file, "user.cache.last_modified") } == EIO)
        }
    }
}
