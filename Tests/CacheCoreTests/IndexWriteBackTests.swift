@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// An index file removed while mounted (as the torture suite does): SQLite goes on with the
/// unlinked file, so cachefs writes it back under its name and says so.
@Suite struct IndexWriteBackTests {
    @Test func aRemovedIndexIsWrittenBackAndNothingIsLostAtUnmount() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            let data = try engine.pool("data")
            _ = try engine.writeFile("before", in: data, content: Array("one".utf8))
            engine.waitForIndex()
            #expect(unlink(store.path + "/index.sqlite") == 0)
            #expect(engine.warnings.all.isEmpty)
            // The next commit notices and writes the open database back at once.
            _ = try engine.writeFile("after", in: data, content: Array("two".utf8))
            engine.waitForIndex()
            #expect(FileManager.default.fileExists(atPath: store.path + "/index.sqlite"),
                    "\(engine.warnings.all) \((try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? [])")
            let warning = try engine.text(WellKnownEntry.root, "user.cache.warnings")
            #expect(warning.contains("was removed or replaced while mounted"), "\(warning)")
            // Changes after the write-back reach the file at unmount.
            _ = try engine.writeFile("later", in: data, content: Array("three".utf8))
            engine.shutdown()
        }
        let reopened = try store.open()
        defer { reopened.shutdown() }
        let data = try reopened.pool("data")
        for (name, content) in [("before", "one"), ("after", "two"), ("later", "three")] {
            let id = try reopened.lookup(parent: data, name: Array(name.utf8)).id
            #expect(try reopened.readAll(id) == Array(content.utf8), "\(name)")
        }
        #expect(reopened.warnings.all.isEmpty)
    }

    @Test func anIndexLeftInPlaceIsNeverWrittenBack() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let before = FileIdentity(path: store.path + "/index.sqlite")
        _ = try engine.writeFile("f", in: try engine.pool("data"), content: Array("x".utf8))
        engine.waitForIndex()
        #expect(FileIdentity(path: store.path + "/index.sqlite") == before)
        #expect(try engine.text(WellKnownEntry.root, "user.cache.warnings") == "")
    }
}
