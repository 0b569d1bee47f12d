@testable import CacheCore
import CacheModel
@testable import CacheNames
import Foundation
import Synchronization
import Testing

/// No hold of the namespace lock waits for the index: whatever a hold reaches that is not
/// loaded is loaded outside it. The index here is a double that counts every read made
/// while the reading thread holds the namespace lock.
@Suite struct NamespaceHoldTests {
    @Test(arguments: ["s3fifo", "sieve", "tinylfu", "gdsf"])
    func anEvictionPassAfterARemountNeverReadsTheIndexInsideTheHold(policy: String) throws {
        let store = try TestStore()
        var created: [EntryID] = []
        do {
            let engine = try store.open(overrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: nil)])
            defer { engine.shutdown() }
            let data = try engine.pool("data")
            try engine.setxattr(data, name: "user.cache.eviction", value: Array(policy.utf8), flags: 0)
            for folder in 0..<12 {
                let directory = try engine.mkdir(parent: data, name: Array("d\(folder)".utf8), mode: 0o755,
                                                 caller: tester).id
                for file in 0..<25 {
                    created.append(try engine.writeFile("f\(file)", in: directory, content: Array(repeating: 7, count: 1000)))
                }
            }
            // A hard link in another folder: its directory must load before the file goes.
            _ = try engine.link(created[3], newParent: data, newName: Array("link".utf8))
            engine.waitForIndex()
        }
        let reads = IndexReadsInsideTheHold()
        let engine = try store.open(overrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: nil)],
                                    directorySource: { reads.watching($0) })
        defer { engine.shutdown() }
        reads.watch(engine.names.namespace)
        let data = try engine.pool("data")
        #expect(!engine.names.namespace.withLock { $0.isLoaded(data) }, "after a remount the pool is not loaded yet")
        try engine.setxattr(data, name: "user.cache.max_size", value: Array("100000".utf8), flags: 0)
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        engine.waitForIndex()
        let files = try #require(Int64(try engine.text(data, "user.cache.files")))
        #expect(files < Int64(created.count), "the pass evicted")
        #expect(try #require(Int64(try engine.text(data, "user.cache.usage"))) <= 100_000)
        #expect(reads.outside > 0, "the double saw the directory loads")
        #expect(reads.inside == 0, "\(reads.inside) index reads inside the namespace hold")
    }
}

/// A ``DirectorySource`` around the real index that counts reads by whether the reading
/// thread holds the namespace lock.
final class IndexReadsInsideTheHold: Sendable {
    private let namespace = Mutex<Namespace?>(nil)
    private let counts = Mutex((inside: 0, outside: 0))

    var inside: Int { counts.withLock { $0.inside } }
    var outside: Int { counts.withLock { $0.outside } }

    func watch(_ namespace: Namespace) { self.namespace.withLock { $0 = namespace } }

    func watching(_ index: IndexDatabase) -> any DirectorySource { Source(index: index, reads: self) }

    fileprivate func count() {
        let held = namespace.withLock { $0 }?.isHeldByCurrentThread ?? false
        counts.withLock { held ? ($0.inside += 1) : ($0.outside += 1) }
    }

    private struct Source: DirectorySource {
        let index: IndexDatabase
        let reads: IndexReadsInsideTheHold

        func entry(_ id: EntryID) throws -> EntryRecord? {
            reads.count()
            return try index.entry(id)
        }

        func children(of parent: EntryID, after: EntryID, limit: Int) throws -> ChildPage {
            reads.count()
            return try index.children(of: parent, after: after, limit: limit)
        }

        func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)] {
            reads.count()
            return try index.allLinks(in: parent)
        }

        func links(of entry: EntryID) throws -> [LinkName] {
            reads.count()
            return try index.links(of: entry)
        }
    }
}
