@testable import CacheCore
@testable import CacheNames
import CacheModel
import Foundation

// What the namespace tests look at besides the engine's public answers.

extension CacheEngine {
    func lookups(of id: EntryID) -> UInt64 {
        names.namespace.withLock { $0.inodes[id]?.lookups ?? 0 }
    }

    /// The names a listing shows in a directory, without "." and "..".
    func names(in directory: EntryID) throws -> [String] {
        try readdir(directory, offset: 0, limit: 100_000).dropFirst(2).map { String(decoding: $0.name, as: UTF8.self) }
    }

    /// Path → "d" or "f:" + content below `directory` (see `NamespaceModelTests.tree`).
    func tree(of directory: EntryID) throws -> [String: String] {
        try NamespaceModelTests.tree(of: self, pool: directory)
    }
}

extension TestStore {
    func hasObject(_ id: EntryID) -> Bool {
        FileManager.default.fileExists(atPath: StoreLayout(root: path).objectPath(for: id))
    }
}

extension PoolUsage {
    init(cachedBytes: Int64 = 0, cachedFiles: Int64 = 0, persistentBytes: Int64 = 0, persistentFiles: Int64 = 0) {
        self.init()
        self.cachedBytes = cachedBytes
        self.cachedFiles = cachedFiles
        self.persistentBytes = persistentBytes
        self.persistentFiles = persistentFiles
    }
}

/// An engine on a new store whose pool `data` is unlimited and whose passes run only when a
/// test asks (flush, sweep and pressure checks an hour apart), shut down after `body`.
func withPassesOnDemand(_ body: (CacheEngine, _ data: EntryID, TestStore, ManualClock) throws -> Void) throws {
    let store = try TestStore()
    let clock = ManualClock()
    let engine = try CacheEngine(EngineConfiguration(
        storePath: store.path, poolOverrides: [PoolOverride(name: "data", maxSize: 0, maxAgeSeconds: nil)],
        minFree: .bytes(0), clock: clock, accessFlushSeconds: 3600, sweepSeconds: 3600, pressureCheckSeconds: 3600))
    defer { engine.shutdown() }
    try body(engine, try engine.pool("data"), store, clock)
}
