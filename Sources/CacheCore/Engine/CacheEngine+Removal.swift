import Foundation

/// The one way cachefs removes files by itself (eviction, expiry, pressure, clear, refusal)
/// and the way `rm` removes them too: names go at once, bytes when the last handle closes.
extension CacheEngine {
    /// Removes `candidates` that still qualify, records one event each, queues the kernel
    /// notifications, and returns how many files and bytes went, and which.
    @discardableResult
    func removeFiles(_ candidates: [EntryRecord], as kind: CacheEventKind, reason: String,
                     qualifies: (EntryRecord, Timestamp) -> Bool = { _, _ in true })
        -> (files: Int, bytes: Int64, ids: Set<EntryID>)
    {
        let time = now
        var removed: [(record: EntryRecord, path: String, names: [LinkName])] = []
        var bytesToDiscard: [EntryID] = []
        namespace.withLock { namespace in
            for candidate in candidates {
                let current: EntryRecord
                let gone: (names: [LinkName], discard: EntryID?)
                let path: String
                do {
                    current = try namespace.record(candidate.entryID)
                    guard current.parent != nil, current.parent == candidate.parent, current.name == candidate.name,
                          current.kind == .file, qualifies(current, time) else { continue }
                    path = self.path(of: current, in: &namespace)
                    // Eviction works on inodes: every name of a hard-linked file goes.
                    gone = try removeEveryName(of: current.entryID, at: time.nanoseconds, in: &namespace)
                } catch CacheError.notFound {
                    continue
                } catch {
                    logger.error("could not remove entry \(candidate.entryID) (\(kind.rawValue)): \(error)")
                    continue
                }
                if let id = gone.discard { bytesToDiscard.append(id) }
                removed.append((current, path, gone.names))
            }
            // A directory whose entry goes changes, as on ext4.
            for parent in Set(removed.flatMap { $0.names.map(\.parent) }) {
                touch(parent, at: time.nanoseconds, in: &namespace)
            }
            // Counted with the usage change, so evicted_files never lags files and usage.
            if kind != .deleted && kind != .fetchFailed {
                counters.withLock { counters in
                    for item in removed {
                        counters.evictedFiles[item.record.pool, default: 0] += 1
                        counters.evictedBytes[item.record.pool, default: 0] += item.record.size
                    }
                }
            }
        }
        discardBytes(of: bytesToDiscard)
        guard !removed.isEmpty else { return (0, 0, []) }
        let ids = Set(removed.map(\.record.entryID))
        let poolNames = self.poolNames()
        events.record(removed.map {
            CacheEvent(time: time, event: kind, pool: poolNames[$0.record.pool] ?? "", path: $0.path,
                       size: $0.record.size, reason: reason)
        })
        let bytes = removed.reduce(Int64(0)) { $0 + $1.record.size }
        // The kernel made a user's own removal itself; only cachefs's removals need telling.
        guard kind != .deleted else { return (removed.count, bytes, ids) }
        notifications.enqueue(removed.flatMap { item in
            item.names.map { PendingNotification.deleted(parent: $0.parent, child: item.record.entryID, name: Array($0.name)) }
        })
        return (removed.count, bytes, ids)
    }

    /// The path of an entry below the mount ("data/photos/a.jpg"), for events.
    func path(of entry: EntryRecord, in namespace: inout NamespaceState) -> String {
        // A directory that cannot be read (an index error, logged where it happened) leaves
        // its part of the path out: the path only names the entry in events.
        EntryPath.of(entry) { try? namespace.record($0) }
    }

    /// Whether a file may be chosen by size, age, pressure or clear: cached, unpinned and
    /// whole (not being written or fetched, as `Schema.evictable` says for the index).
    func isEvictable(_ record: EntryRecord, at time: Timestamp) -> Bool {
        !record.persistent && !record.writing && !PinState(storedValue: record.pinnedUntil).isActive(at: time)
    }

    /// Whether age policy says the file is gone.
    func isExpired(_ record: EntryRecord, at time: Timestamp) -> Bool {
        guard isEvictable(record, at: time), let expiry = expiry(of: record) else { return false }
        return expiry <= time
    }

    func poolNames() -> [EntryID: String] {
        let ids = policies.withLock { Array($0.keys) }
        var names: [EntryID: String] = [:]
        namespace.withLock { namespace in
            for id in ids {
                // Pools are children of the root, which is loaded at mount: no I/O can fail here.
                if let record = try? namespace.record(id) { names[id] = String(decoding: record.name, as: UTF8.self) }
            }
        }
        return names
    }
}
