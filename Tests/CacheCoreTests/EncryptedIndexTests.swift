@testable import CacheCore
import CacheModel
import Foundation
import GRDB
import Glibc
import Testing

/// An encrypted store's index: names, symlink targets, user xattrs and pool policies are
/// sealed on disk, read back whole with the key, and a sealed field that was changed or
/// moved answers EIO.
@Suite struct EncryptedIndexTests {
    private let store: TestStore
    private let encryption: StoreEncryption
    private static let marker = "Qz7sealmark"

    init() throws {
        store = try TestStore()
        encryption = try StoreKeyFile.create(inStore: store.path, userKey: TestKeys.random())
    }

    private func named(_ text: String) -> [UInt8] { Array((text + Self.marker).utf8) }

    /// Every file under the store, the index's pages and log included, searched for the marker.
    private func storeFilesHoldingMarker() throws -> [String] {
        let marker = Data(Self.marker.utf8)
        let root = URL(fileURLWithPath: store.path)
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
        return try files.compactMap { $0 as? URL }.filter { url in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { return false }
            return try Data(contentsOf: url).range(of: marker) != nil
        }.map(\.path)
    }

    /// One of each kind of name and value, made and renamed across directories.
    private struct Made {
        var directory: EntryID
        var file: EntryID
        var symlink: EntryID
    }

    /// ``makeOneOfEach(_:)`` on a mount of the store, shut down after.
    private func makeOneOfEachAndUnmount() throws -> Made {
        let engine = try store.open(encryption: encryption)
        defer { engine.shutdown() }
        return try makeOneOfEach(engine)
    }

    private func makeOneOfEach(_ engine: CacheEngine) throws -> Made {
        let data = try engine.pool("data")
        let first = try engine.mkdir(parent: data, name: named("first-"), mode: 0o755, caller: tester).id
        let second = try engine.mkdir(parent: data, name: named("second-"), mode: 0o755, caller: tester).id
        let file = try engine.writeFile("file-" + Self.marker, in: first, content: Array("contents".utf8))
        try engine.rename(parent: first, name: named("file-"), newParent: second, newName: named("moved-"), flags: [])
        _ = try engine.link(file, newParent: first, newName: named("hard-"))
        let symlink = try engine.symlink(parent: second, name: named("link-"), target: named("/target-"),
                                         caller: tester).id
        try engine.setxattr(file, name: "user.note-" + Self.marker, value: named("value-"), flags: 0)
        // An empty folder (removed with the test's store): the origin is stored, never fetched from.
        let origin = store.path + "/origin-" + Self.marker
        try FileManager.default.createDirectory(atPath: origin, withIntermediateDirectories: false)
        try engine.setxattr(data, name: "user.cache.origin", value: Array(("file://" + origin).utf8), flags: 0)
        try engine.setxattr(data, name: "user.cache.max_size", value: Array("7777777".utf8), flags: 0)
        return Made(directory: second, file: file, symlink: symlink)
    }

    @Test func namesTargetsXattrsAndPoliciesAreSealedAndReadBackWhole() throws {
        let made: Made
        let origin: String
        do {
            let engine = try store.open(encryption: encryption)
            defer { engine.shutdown() }
            made = try makeOneOfEach(engine)
            origin = try engine.text(try engine.pool("data"), "user.cache.origin")
        }
        #expect(try storeFilesHoldingMarker() == [])
        // A row found by its name in the index, with the key: the name as asked, the target opened.
        let index = try IndexDatabase(path: StoreLayout(root: store.path).indexPath, encryption: encryption)
        let link = try #require(try index.child(of: made.directory, named: Data(named("link-"))))
        #expect(link.entryID == made.symlink && link.name == Data(named("link-")) && link.target == Data(named("/target-")))

        let engine = try store.open(encryption: encryption)
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        #expect(try engine.names(in: data).sorted() == ["first-" + Self.marker, "second-" + Self.marker])
        #expect(try engine.lookup(parent: made.directory, name: named("moved-")).id == made.file)
        let first = try engine.lookup(parent: data, name: named("first-")).id
        #expect(try engine.lookup(parent: first, name: named("hard-")).id == made.file)
        #expect(try engine.readAll(made.file) == Array("contents".utf8))
        #expect(try engine.readlink(made.symlink) == named("/target-"))
        #expect(try engine.getxattr(made.file, name: "user.note-" + Self.marker) == named("value-"))
        #expect(try engine.listxattr(made.file).contains("user.note-" + Self.marker))
        #expect(try engine.text(data, "user.cache.origin") == origin)
        #expect(try engine.text(data, "user.cache.max_size") == "7777777")
    }

    /// Without the key the index still opens (as `verify` may), but no name matches.
    @Test func withoutTheKeyNoNameIsFound() throws {
        let made = try makeOneOfEachAndUnmount()
        let index = try IndexDatabase(path: StoreLayout(root: store.path).indexPath)
        #expect(try index.child(of: made.directory, named: Data(named("moved-"))) == nil)
        let stored = try #require(try index.entry(made.file))
        #expect(!stored.name.isEmpty && stored.name != Data(named("moved-")))
    }

    @Test func aChangedOrMovedSealedRowIsLeftOutAndReported() throws {
        let made = try makeOneOfEachAndUnmount()
        let queue = try DatabaseQueue(path: StoreLayout(root: store.path).indexPath)
        // The symlink's row moves into the other directory, where its sealed name does not open.
        let data: EntryID = try #require(try queue.read { db in
            try EntryID.fetchOne(db, sql: "SELECT pool FROM entry WHERE id = ?", arguments: [made.symlink])
        })
        try queue.write { db in
            try db.execute(sql: "UPDATE entry SET parent = ? WHERE id = ?", arguments: [data, made.symlink])
            try db.execute(sql: "UPDATE entry SET target = zeroblob(length(target)) WHERE id = ?",
                           arguments: [made.symlink])
        }
        try queue.close()

        let engine = try store.open(encryption: encryption)
        defer { engine.shutdown() }
        // The moved row is left out of its new directory and reported; the rest stays usable.
        #expect(try engine.names(in: data).sorted() == ["first-" + Self.marker, "second-" + Self.marker])
        #expect(throws: CacheError.io(EIO)) { try engine.readlink(made.symlink) }
        #expect(try engine.lookup(parent: made.directory, name: named("moved-")).id == made.file)
        #expect(try engine.readAll(made.file) == Array("contents".utf8))
        let events = try String(contentsOfFile: StoreLayout(root: store.path).eventsPath, encoding: .utf8)
        #expect(events.contains(#""event":"tampered","path":"entry \#(made.symlink)""#), "\(events)")
    }

    /// `verify` with the key lists a file whose sealed name was changed, and `--repair` drops it.
    @Test func verifyListsAFileWhoseSealedNameDoesNotOpen() throws {
        let made = try makeOneOfEachAndUnmount()
        let queue = try DatabaseQueue(path: StoreLayout(root: store.path).indexPath)
        try queue.write { db in
            try db.execute(sql: "UPDATE entry SET name = zeroblob(length(name)) WHERE id = ?", arguments: [made.file])
        }
        try queue.close()
        let verifier = StoreVerifier(storePath: store.path, encryption: encryption)
        #expect(try verifier.run(repair: true).problems == [.sealedRow(id: made.file)])
        #expect(try verifier.run(repair: false).problems == [])
        #expect(!store.hasObject(made.file))
    }
}
