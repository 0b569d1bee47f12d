import CacheModel
import Foundation

/// Pools as the namespace sees them: their names and settings, and what the settings
/// says of one file (its size limit, whether it may be evicted, when it expires).
extension Names {
    package func settings(of record: EntryRecord) -> PoolSettings {
        poolSettings.withLock { $0[record.pool] } ?? PoolSettings()
    }

    package func poolIDs() -> [EntryID] {
        poolSettings.withLock { Array($0.keys) }
    }

    package func poolNames() -> [EntryID: String] {
        let ids = poolIDs()
        return namespace.withLock { namespace in
            var names: [EntryID: String] = [:]
            for id in ids {
                if let name = poolName(id, in: &namespace) { names[id] = name }
            }
            return names
        }
    }

    /// A pool's name, from memory: pools are children of the root, loaded at mount.
    func poolName(_ pool: EntryID, in namespace: inout NamespaceState) -> String? {
        namespace.inodes[pool].map { String(decoding: $0.record.name, as: UTF8.self) }
    }

    /// Cached files may not outgrow their pool's max_size (EFBIG); persistent ones may.
    package func sizeLimit(for record: EntryRecord) -> Int64? {
        guard !record.persistent else { return nil }
        let maxSize = poolSettings.withLock { $0[record.pool]?.maxSize ?? 0 }
        return maxSize > 0 ? maxSize : nil
    }

    /// The size a handle's writes may take the file to: its ``sizeLimit``, less what the
    /// rest of its unit holds when it is opened, so a unit larger than its pool is refused
    /// as a file is. A unit's bytes are kept in memory (``unitBytes(of:in:)``): a walk of
    /// the unit counts them once, then each change of a file keeps them, so filling a unit
    /// costs O(1) per file.
    package func writeLimit(for record: EntryRecord) -> Int64? {
        guard let limit = sizeLimit(for: record) else { return nil }
        guard !units.isEmpty else { return limit }
        let roots = units.all
        // The walk loads the unit before the hold that counts it: no unload in between.
        return keepingLoaded { () -> Int64? in
            for attempt in 0..<2 {
                let answer = namespace.withLock { namespace -> (limit: Int64?, walk: EntryID?, error: String?) in
                    // The parents' walk is memory only.
                    guard let unit = namespace.unit(of: record, roots: roots) else { return (limit, nil, nil) }
                    let own = namespace.inodes[record.entryID]?.record
                    let ownBytes = own.map { $0.persistent || !countsInUsage($0) ? 0 : $0.size } ?? 0
                    if let known = namespace.unitBytes[unit] { return (limit - (known - ownBytes), nil, nil) }
                    guard attempt > 0 else { return (nil, unit, nil) }
                    do {
                        return (limit - (try unitBytes(of: unit, in: &namespace) - ownBytes), nil, nil)
                    } catch {
                        return (limit, nil, "could not count unit \(unit) to size a write: \(error)")
                    }
                }
                // Logged after the hold: a log line is a write(2).
                if let error = answer.error { logger.error("\(error)") }
                guard let unit = answer.walk else { return answer.limit }
                // Counted once: the unit's directories load outside the lock first.
                loadSubtreeOutsideTheLock(unit)
            }
            return limit
        }
    }

    func isOverLimit(_ pool: EntryID) -> Bool {
        guard let settings = poolSettings.withLock({ $0[pool] }) else { return false }
        let current = usage.usage(of: pool)
        return (settings.maxSize > 0 && current.cachedBytes > settings.maxSize)
            || (settings.maxFiles > 0 && current.cachedFiles > settings.maxFiles)
    }

    /// Asks the evictor to look at a pool that is over a limit: once a write in it has ended
    /// (the size pass left that file out while it was being written), or a fetch started.
    package func enforceLimitsIfOver(in pool: EntryID) {
        if isOverLimit(pool) { effects.requestEnforcement(of: [pool]) }
    }

    /// Whether a file may be chosen by size, age, pressure or clear: cached, unpinned and
    /// whole (not being written or fetched, as `Schema.evictable` says for the index).
    package func isEvictable(_ record: EntryRecord, at time: Timestamp) -> Bool {
        !record.persistent && !record.writing && !PinState(storedValue: record.pinnedUntil).isActive(at: time)
    }

    /// Whether max_age says the file is gone.
    package func isExpired(_ record: EntryRecord, at time: Timestamp) -> Bool {
        guard isEvictable(record, at: time), let expiry = expiry(of: record) else { return false }
        return expiry <= time
    }

    /// Seconds until `record` expires, for the kernel's caches of its name and attributes; for
    /// a file past its expiry that stays (open, being written) ``Tunables/expiredEntrySeconds``,
    /// so that the kernel asks again soon without asking at every `stat`; nil if never.
    package func secondsUntilExpiry(of record: EntryRecord, at time: Timestamp) -> Double? {
        guard let expiry = expiry(of: record) else { return nil }
        let left = Double(expiry.nanoseconds - time.nanoseconds) / 1_000_000_000
        return left > 0 ? left : Tunables.expiredEntrySeconds
    }

    /// When max_age removes the file if it is not read again; nil if never. A pin that
    /// ends by itself holds the file until its end; a pin for good, never.
    package func expiry(of record: EntryRecord) -> Timestamp? {
        guard record.kind == .file, !record.persistent else { return nil }
        let poolSettings = settings(of: record)
        let maxAge = record.expiration > 0 ? record.expiration : poolSettings.maxAgeSeconds
        guard maxAge > 0 else { return nil }
        let basis = poolSettings.ageBasis == .access ? lastAccess(of: record) : record.mtime
        let byAge = basis + maxAge * 1_000_000_000
        switch PinState(storedValue: record.pinnedUntil) {
        case .unpinned: return Timestamp(nanoseconds: byAge)
        case .forever: return nil
        case .until(let end): return Timestamp(nanoseconds: max(byAge, end.nanoseconds))
        }
    }
}

/// A pool's settings as other owners read and change them: each change under `poolChanges`,
/// so a settings value read and written back whole loses no concurrent change.
extension Names {
    package func allPoolSettings() -> [EntryID: PoolSettings] {
        poolSettings.withLock { $0 }
    }

    /// The settings of pool `pool`, or nil when there is no such pool.
    package func settings(ofPool pool: EntryID) -> PoolSettings? {
        poolSettings.withLock { $0[pool] }
    }

    /// Runs `body` while no other change of a pool or its settings can run.
    package func withPoolChanges<Result>(_ body: () throws -> Result) rethrows -> Result {
        try poolChanges.withLock { _ in try body() }
    }

    /// Changes the settings of `pool` (its record): the new settings commit first, then
    /// memory and the pool's replacement policy take them.
    package func changeSettings(of pool: EntryRecord, _ change: (PoolSettings) throws -> PoolSettings) throws {
        try withPoolChanges {
            let updated = try change(settings(of: pool))
            let poolID = pool.entryID
            try index.commitSettings(updated, of: poolID)
            poolSettings.withLock { $0[poolID] = updated }
            replacement.apply(updated, to: poolID)
        }
    }

    /// Puts a pool's settings in memory and queues their commit; call within `withPoolChanges`.
    package func queueSettings(_ settings: PoolSettings, of pool: EntryID) {
        poolSettings.withLock { $0[pool] = settings }
        index.enqueueSettings(settings, of: pool)
    }
}
