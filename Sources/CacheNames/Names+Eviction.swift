import CacheModel
/// What the evictor's host reads and changes in the namespace: memory only, in short holds.
extension Names {
    /// See ``EvictionHost/withCachedFiles(_:)``.
    package func withCachedFiles<Result>(
        _ body: (_ inMemory: (EntryID) -> EntryRecord?, _ isEligibleInMemory: (EntryID) -> Bool?) -> Result
    ) -> Result {
        let time = now
        return namespace.withLock { namespace in
            body({ id in namespace.inodes[id]?.record }, { id in
                namespace.inodes[id].map { isEvictable($0.record, at: time) }
            })
        }
    }

    /// Ends the pin leases of `ids` that have run out; returns their pools.
    package func endPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID> {
        keepingLoaded {
            // Each lease ended changes memory before the next is read: all load first, and an
            // id memory does not hold then is gone.
            loadEntries(ids)
            return endLoadedPinLeases(of: ids, at: time)
        }
    }

    private func endLoadedPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID> {
        let (pools, errors) = namespace.withLock { namespace in
            var pools: Set<EntryID> = []
            var errors: [String] = []
            for id in ids {
                guard let record = namespace.inodes[id]?.record, record.parent != nil, record.pinnedUntil > 0,
                      record.pinnedUntil <= time.nanoseconds else { continue }
                do {
                    try update(id, in: &namespace) { $0.pinnedUntil = 0 }
                    pools.insert(record.pool)
                } catch {
                    errors.append("could not end the pin lease of entry \(id): \(error)")
                }
            }
            return (pools, errors)
        }
        // Logged after the hold: a log line is a write(2).
        for error in errors { logger.error("\(error)") }
        return pools
    }

    /// The records memory holds of `ids` (one short hold, memory only).
    package func recordsInMemory(_ ids: some Sequence<EntryID>) -> [EntryRecord] {
        namespace.withLock { namespace in ids.compactMap { namespace.inodes[$0]?.record } }
    }

    /// The candidates no handle holds open (removing an open file frees nothing yet).
    package func closedFiles(_ candidates: [EntryRecord]) -> [EntryRecord] {
        namespace.withLock { namespace in
            candidates.filter { (namespace.inodes[$0.entryID]?.openHandles ?? 0) == 0 }
        }
    }

    /// The paths of entries below the mount, for events and previews. Victims read from the
    /// index may sit in directories not loaded yet: those load outside the lock first.
    package func paths(of records: [EntryRecord]) -> [String] {
        let directories = Array(Set(records.compactMap(\.parent)))
        do {
            return try withLoaded(directories) { namespace in records.map { path(of: $0, in: &namespace) } }
        } catch {
            logger.error("could not load the directories of \(records.count) victims to name them: \(error)")
            return records.map { String(decoding: $0.name, as: UTF8.self) }
        }
    }
}
