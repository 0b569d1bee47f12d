@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Synchronization
import Testing

/// Records what the core would tell the kernel.
final class RecordingNotifier: KernelNotifier {
    let deletions = Mutex<[String]>([])

    func deleted(parent: EntryID, child: EntryID, name: [UInt8]) {
        deletions.withLock { $0.append(String(decoding: name, as: UTF8.self)) }
    }

    var names: [String] { deletions.withLock { $0 } }
}

@Suite struct CoreEvictionTests {
    private func open(_ store: TestStore, clock: ManualClock, notifier: RecordingNotifier,
                      overrides: [PoolOverride]) throws -> CacheEngine {
        try CacheEngine(EngineConfiguration(storePath: store.path, poolOverrides: overrides, minFree: .bytes(0),
                                            clock: clock, notifier: notifier, accessFlushSeconds: 3600,
                                            sweepSeconds: 3600, pressureCheckSeconds: 3600))
    }

    @Test func victimsAreTheLeastRecentlyReadAndTheKernelIsTold() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let notifier = RecordingNotifier()
        let engine = try open(store, clock: clock, notifier: notifier,
                              overrides: [PoolOverride(name: "data", maxSize: 1000, maxAgeSeconds: nil)])
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        var ids: [String: EntryID] = [:]
        for name in ["a", "b", "c", "d"] {
            clock.advance(seconds: 1)
            ids[name] = try engine.writeFile(name, in: data, content: Array(repeating: 0, count: 200))
        }
        clock.advance(seconds: 1)
        _ = try engine.readAll(ids["a"]!)
        try engine.setxattr(ids["b"]!, name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        clock.advance(seconds: 1)
        try engine.writeFile("e", in: data, content: Array(repeating: 0, count: 300))
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        // 1100 bytes > 1000: down to 900, least recently read first, pinned b skipped.
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("c".utf8)) }
        #expect(try engine.lookup(parent: data, name: Array("a".utf8)).id == ids["a"])
        #expect(try engine.lookup(parent: data, name: Array("b".utf8)).id == ids["b"])
        #expect(try engine.text(data, "user.cache.usage") == "900")
        #expect(Shell.waitUntil { notifier.names == ["c"] })
        #expect(try engine.text(data, "user.cache.evicted_files") == "1")
    }

    @Test func expiryUsesTheBasisAndOwnExpirationAndLeasesEnd() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let notifier = RecordingNotifier()
        let engine = try open(store, clock: clock, notifier: notifier,
                              overrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: 100)])
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let old = try engine.writeFile("old", in: data, content: [1])
        let short = try engine.writeFile("short", in: data, content: [1])
        let leased = try engine.writeFile("leased", in: data, content: [1])
        try engine.setxattr(short, name: "user.cache.expiration", value: Array("10s".utf8), flags: 0)
        try engine.setxattr(leased, name: "user.cache.pinned", value: Array("150s".utf8), flags: 0)
        clock.advance(seconds: 50)
        _ = try engine.readAll(old)
        engine.evictor.sweepExpired(in: engine.eviction)
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("short".utf8)) }
        #expect(throws: CacheError.notFound) { try engine.text(short, "user.cache.state") }
        clock.advance(seconds: 60)
        engine.evictor.sweepExpired(in: engine.eviction)
        // old was read at 50 s: 60 s later it is within its 100 s.
        #expect(try engine.text(old, "user.cache.state") == "cached")
        #expect(try engine.text(leased, "user.cache.state") == "pinned")
        clock.advance(seconds: 60)
        engine.evictor.runRound(in: engine.eviction)
        engine.evictor.sweepExpired(in: engine.eviction)
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("leased".utf8)) }
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("old".utf8)) }
    }

    @Test func clearSparesPinnedAndPersistent() throws {
        let store = try TestStore()
        let clock = ManualClock()
        let engine = try open(store, clock: clock, notifier: RecordingNotifier(), overrides: [])
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        let pinned = try engine.writeFile("p", in: data, content: [1])
        let kept = try engine.writeFile("k", in: data, content: [1, 2])
        try engine.writeFile("c", in: data, content: [1, 2, 3])
        try engine.setxattr(pinned, name: "user.cache.pinned", value: Array("1".utf8), flags: 0)
        try engine.setxattr(kept, name: "user.cache.persistent", value: Array("1".utf8), flags: 0)
        engine.evictor.clear(pools: [data], in: engine.eviction)
        let names = try engine.readdir(data, offset: 2, limit: 10).map { String(decoding: $0.name, as: UTF8.self) }
        #expect(names == ["p", "k"])
        #expect(try engine.text(data, "user.cache.usage") == "1")
        #expect(try engine.text(data, "user.cache.persistent_usage") == "2")
    }
}
