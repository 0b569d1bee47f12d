import CacheModel
import Foundation
import Glibc

/// Creates a new store's folders and first rows, and applies `--pool` overrides.
enum StoreInitializer {
    static func prepareDirectories(_ layout: StoreLayout, disk: any Disk) throws {
        var info = stat()
        guard stat(layout.root, &info) == 0 else {
            throw StoreError.cannotOpen(layout.root, String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError.cannotOpen(layout.root, "not a directory")
        }
        guard access(layout.root, R_OK | W_OK | X_OK) == 0 else {
            throw StoreError.cannotOpen(layout.root, String(cString: strerror(errno)))
        }
        // Only cachefs and the mounting user may look inside a store.
        chmod(layout.root, 0o700)
        do {
            try disk.mkdir(layout.objectsPath, mode: 0o700)
            for name in StoreLayout.fanOutDirectories {
                try disk.mkdir(layout.objectsPath + "/" + name, mode: 0o700)
            }
        } catch {
            throw StoreError.cannotOpen(layout.root, "cannot create objects folder: \(error)")
        }
    }

    static func ensureRootAndPools(index: IndexDatabase, clock: any WallClock, overrides: [PoolOverride]) throws {
        let now = clock.now().nanoseconds
        if try index.entry(WellKnownEntry.root) == nil {
            var root = EntryRecord.directory(name: Data(), parent: 0, pool: 0, mode: 0o755,
                                             uid: getuid(), gid: getgid(), now: now)
            root.id = WellKnownEntry.root
            _ = try index.insert(root)
            for (name, settings) in PoolSettings.defaultPools {
                let record = EntryRecord.directory(name: Data(name.utf8), parent: WellKnownEntry.root, pool: 0,
                                                   mode: 0o755, uid: getuid(), gid: getgid(), now: now)
                _ = try index.insertPool(record, settings: settings)
            }
        }
        for override in overrides {
            try apply(override, index: index, now: now)
        }
        try index.countSubdirectories(of: WellKnownEntry.root)
    }

    /// `--origin POOL=URL` options: each pool (created if needed) gets the origin, persisted.
    static func applyOrigins(_ origins: [OriginOverride], index: IndexDatabase, clock: any WallClock) throws {
        for origin in origins {
            let name = Data(origin.pool.utf8)
            if try index.child(of: WellKnownEntry.root, named: name) == nil {
                let record = EntryRecord.directory(name: name, parent: WellKnownEntry.root, pool: 0, mode: 0o755,
                                                   uid: getuid(), gid: getgid(), now: clock.now().nanoseconds)
                _ = try index.insertPool(record, settings: PoolSettings())
                try index.countSubdirectories(of: WellKnownEntry.root)
            }
            guard let pool = try index.child(of: WellKnownEntry.root, named: name) else { continue }
            var settings = try index.poolSettings()[pool.entryID] ?? PoolSettings()
            settings.origin = origin.url
            try index.saveSettings(settings, for: pool.entryID)
        }
    }

    /// A `--pool` option creates the pool if needed and persists its limits.
    private static func apply(_ override: PoolOverride, index: IndexDatabase, now: Int64) throws {
        let name = Data(override.name.utf8)
        if let existing = try index.child(of: WellKnownEntry.root, named: name) {
            var settings = try index.poolSettings()[existing.entryID] ?? PoolSettings()
            settings.maxSize = override.maxSize
            if let age = override.maxAgeSeconds { settings.maxAgeSeconds = age }
            try index.saveSettings(settings, for: existing.entryID)
        } else {
            var settings = PoolSettings(maxSize: override.maxSize)
            if let age = override.maxAgeSeconds { settings.maxAgeSeconds = age }
            let record = EntryRecord.directory(name: name, parent: WellKnownEntry.root, pool: 0, mode: 0o755,
                                               uid: getuid(), gid: getgid(), now: now)
            _ = try index.insertPool(record, settings: settings)
        }
    }
}
