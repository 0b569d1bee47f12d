@testable import CacheCore
import CacheModel
import Foundation
import Glibc
import Testing

/// Issue 9: a pool outlives `rm -rf`, only `remove_pool` removes one, and a file larger than
/// its pool costs no other file.
@Suite struct PoolKeepingTests {
    @Test func rmdirOfAnEmptyPoolIsBusyAndKeepsItsPolicy() throws {
        let store = try TestStore()
        let engine = try store.open()
        defer { engine.shutdown() }
        let avatars = try engine.pool("avatars")
        #expect(throws: CacheError.io(EBUSY)) { try engine.rmdir(parent: WellKnownEntry.root, name: Array("avatars".utf8)) }
        #expect(try engine.lookup(parent: WellKnownEntry.root, name: Array("avatars".utf8)).id == avatars)
        #expect(try engine.text(avatars, "user.cache.max_age") == "604800")
    }

    @Test func removePoolRemovesAnEmptyPoolAndItsPolicy() throws {
        let store = try TestStore()
        try removeAvatars(in: store)
        let engine = try store.open()
        defer { engine.shutdown() }
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: WellKnownEntry.root, name: Array("avatars".utf8)) }
        #expect(try engine.policyCount() == 2)
    }

    private func removeAvatars(in store: TestStore) throws {
        let engine = try store.open()
        defer { engine.shutdown() }
        let avatars = try engine.pool("avatars")
        try engine.writeFile("f", in: avatars, content: [1])
        let remove = { (name: String) in
            try engine.setxattr(WellKnownEntry.root, name: "user.cache.remove_pool", value: Array(name.utf8), flags: 0)
        }
        #expect(throws: CacheError.notEmpty) { try remove("avatars") }
        #expect(throws: CacheError.notFound) { try remove("nopool") }
        #expect(throws: CacheError.unknownCacheAttribute("user.cache.remove_pool")) {
            try engine.setxattr(avatars, name: "user.cache.remove_pool", value: Array("avatars".utf8), flags: 0)
        }
        try engine.unlink(parent: avatars, name: Array("f".utf8))
        try remove("avatars")
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: WellKnownEntry.root, name: Array("avatars".utf8)) }
    }

    @Test func aFileBeingWrittenCostsNoOtherFileAndIsRefusedPastTheLimit() throws {
        let store = try TestStore()
        let engine = try CacheEngine(EngineConfiguration(
            storePath: store.path, poolOverrides: [PoolOverride(name: "data", maxSize: 1000, maxAgeSeconds: nil)],
            minFree: .bytes(0), accessFlushSeconds: 3600, sweepSeconds: 3600, pressureCheckSeconds: 3600))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        for name in ["a", "b", "c"] { try engine.writeFile(name, in: data, content: Array(repeating: 0, count: 100)) }
        let big = try engine.create(parent: data, name: Array("big".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        let chunk = [UInt8](repeating: 7, count: 400)
        for offset in [0, 400] {
            _ = try chunk.withUnsafeBytes { try engine.write(big.handle, offset: Int64(offset), bytes: $0) }
        }
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        #expect(try engine.text(data, "user.cache.files") == "4")
        #expect(throws: CacheError.fileTooLarge) {
            _ = try chunk.withUnsafeBytes { try engine.write(big.handle, offset: 800, bytes: $0) }
        }
        engine.release(big.handle)
        #expect(throws: CacheError.notFound) { try engine.lookup(parent: data, name: Array("big".utf8)) }
        for name in ["a", "b", "c"] { _ = try engine.lookup(parent: data, name: Array(name.utf8)) }
        #expect(try engine.text(data, "user.cache.usage") == "300")
    }

    @Test func aFileThatFitsIsMadeRoomForWhenItsWriteEnds() throws {
        let store = try TestStore()
        let engine = try CacheEngine(EngineConfiguration(
            storePath: store.path, poolOverrides: [PoolOverride(name: "data", maxSize: 1000, maxAgeSeconds: nil)],
            minFree: .bytes(0), accessFlushSeconds: 3600, sweepSeconds: 3600, pressureCheckSeconds: 3600))
        defer { engine.shutdown() }
        let data = try engine.pool("data")
        for name in ["a", "b", "c"] { try engine.writeFile(name, in: data, content: Array(repeating: 0, count: 200)) }
        let new = try engine.create(parent: data, name: Array("new".utf8), mode: 0o644, flags: O_WRONLY, caller: tester)
        let bytes = [UInt8](repeating: 7, count: 600)
        _ = try bytes.withUnsafeBytes { try engine.write(new.handle, offset: 0, bytes: $0) }
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        #expect(try engine.text(data, "user.cache.files") == "4")
        try engine.flush(new.handle)
        engine.release(new.handle)
        engine.evictor.enforceLimits(of: data, in: engine.eviction)
        #expect(Int(try engine.text(data, "user.cache.usage"))! <= 900)
        _ = try engine.lookup(parent: data, name: Array("new".utf8))
    }
}

extension CacheEngine {
    func policyCount() throws -> Int { try index.poolSettings().count }
}
