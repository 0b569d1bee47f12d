@testable import CacheCore
import CacheModel
import Foundation
import GRDB
import Testing

/// A directory read back from the index after a restart: the index hands its children over in
/// name order, while a listing runs in id order.
@Suite struct DirectoryLoadingTests {
    @Test func aDirectoryLoadedInNameOrderListsEveryNameOnceInIDOrder() throws {
        let store = try TestStore()
        var created: [EntryID] = []
        var expected: [String: EntryID] = [:]
        do {
            let engine = try store.open()
            defer { engine.shutdown() }
            let data = try engine.pool("data")
            // Each name sorts before the one created just before it.
            for number in stride(from: 299, through: 0, by: -1) {
                let name = String(format: "f%03d", number)
                let id = try engine.writeFile(name, in: data, content: [UInt8(number % 256)])
                created.append(id)
                expected[name] = id
            }
            // A second name of one inode in the same directory.
            _ = try engine.link(created[150], newParent: data, newName: Array("a-second-name".utf8))
            expected["a-second-name"] = created[150]
            engine.waitForIndex()
        }
        let engine = try store.open()
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        var listed: [DirectoryItem] = []
        var offset: Int64 = 0
        while true {
            let page = try engine.readdir(data, offset: offset, limit: 7)
            let names = page.filter { $0.name != Array(".".utf8) && $0.name != Array("..".utf8) }
            listed += names
            guard let last = page.last else { break }
            offset = last.nextOffset
        }
        let byName = Dictionary(listed.map { (String(decoding: $0.name, as: UTF8.self), [$0.id]) }, uniquingKeysWith: +)
        #expect(byName.count == expected.count && byName.allSatisfy { $0.value.count == 1 },
                "every name once: \(listed.count) listed for \(expected.count) names")
        #expect(byName.mapValues { $0[0] } == expected)
        let ids = listed.map(\.id)
        #expect(ids == ids.sorted(), "a listing runs in id order, so it resumes correctly across changes")
        #expect(try engine.lookup(parent: data, name: Array("f123".utf8)).id == expected["f123"])
    }

    /// An index read that fails halfway through a load: the directory stays unloaded, so the
    /// next request reads it again rather than list half of it for the life of the mount.
    @Test func aLoadThatFailsLeavesTheDirectoryToBeReadAgain() throws {
        let store = try TestStore()
        do {
            let engine = try store.open()
            defer { engine.shutdown() }
            let sub = try engine.mkdir(parent: try engine.pool("data"), name: Array("sub".utf8), mode: 0o755,
                                       caller: tester).id
            let id = try engine.writeFile("f", in: sub, content: Array("bytes".utf8))
            _ = try engine.link(id, newParent: sub, newName: Array("g".utf8))
            engine.waitForIndex()
        }
        let engine = try store.open()
        defer { engine.shutdown() }
        let sub = try engine.lookup(parent: try engine.pool("data"), name: Array("sub".utf8)).id
        // The rows of `sub` read, its hard links not: the link table is away.
        // A second writer beside the engine's, which commits in the background (access times,
        // durability): it waits for the write lock as SQLite's busy timeout lets it, where with
        // none it failed at once with "database is locked" (seen once in CI).
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let outside = try DatabaseQueue(path: StoreLayout(root: store.path).indexPath, configuration: configuration)
        try outside.write { try $0.execute(sql: "ALTER TABLE link RENAME TO link_away") }
        #expect(throws: (any Error).self) { try engine.names(in: sub) }
        #expect(throws: (any Error).self, "a second listing must not find the directory half loaded") {
            try engine.names(in: sub)
        }
        try outside.write { try $0.execute(sql: "ALTER TABLE link_away RENAME TO link") }
        #expect(try engine.names(in: sub).sorted() == ["f", "g"])
        #expect(try engine.getattr(try engine.lookup(parent: sub, name: Array("g".utf8)).id).linkCount == 2)
    }
}
