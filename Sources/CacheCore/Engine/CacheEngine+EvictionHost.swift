import Foundation

/// The engine as the evictor's host: the narrow set of questions and acts in
/// ``EvictionHost``, each a forward to the subsystem that owns the answer.
extension CacheEngine: EvictionHost {
    func poolPolicies() -> [EntryID: PoolPolicy] { policies.withLock { $0 } }

    func usage(of pool: EntryID) -> PoolUsage { usage.usage(of: pool) }

    var openHandleCount: Int { handles.count }

    func closedFiles(_ candidates: [EntryRecord]) -> [EntryRecord] {
        namespace.withLock { namespace in
            candidates.filter { (namespace.inodes[$0.entryID]?.openHandles ?? 0) == 0 }
        }
    }

    func freeSpace() throws -> (available: Int64, total: Int64) {
        let stats = try statfs()
        return (Int64(stats.availableBlocks * stats.fragmentSize), Int64(stats.blocks * stats.fragmentSize))
    }

    func minFree() throws -> MinFree {
        guard let text = try index.setting(MinFree.settingKey) else { return MinFree.defaultValue }
        guard let value = MinFree.parse(text) else {
            logger.error("the stored min_free \(text) does not parse; using \(MinFree.defaultValue)")
            return MinFree.defaultValue
        }
        return value
    }

    var victimQueries: any VictimQueries { index }

    func withCachedFiles<Result>(
        _ body: (_ record: (EntryID) throws -> EntryRecord?, _ isEligibleInMemory: (EntryID) -> Bool?) -> Result
    ) -> Result {
        let time = now
        return namespace.withLock { namespace in
            body({ id in
                do {
                    return try namespace.record(id)
                } catch CacheError.notFound {
                    return nil
                }
            }, { id in
                namespace.inodes[id].map { isEvictable($0.record, at: time) }
            })
        }
    }

    func endPinLeases(of ids: [EntryID], at time: Timestamp) -> Set<EntryID> {
        namespace.withLock { namespace in
            var pools: Set<EntryID> = []
            for id in ids {
                do {
                    let record = try namespace.record(id)
                    guard record.pinnedUntil > 0, record.pinnedUntil <= time.nanoseconds else { continue }
                    try update(id, in: &namespace) { $0.pinnedUntil = 0 }
                    pools.insert(record.pool)
                } catch CacheError.notFound {
                    continue
                } catch {
                    logger.error("could not end the pin lease of entry \(id): \(error)")
                }
            }
            return pools
        }
    }

    func commitQueued() { writer.flush() }

    func saveCounters() {
        writer.enqueue(.setting(key: PoolCounters.settingKey, value: counters.withLock { $0 }.encoded))
    }

    func savePolicy(_ policy: PoolPolicy, of pool: EntryID) {
        policies.withLock { $0[pool] = policy }
        writer.enqueue([.action { db in try IndexStore.savePolicy(policy, for: pool, in: db) }])
    }

    func record(_ events: [CacheEvent]) { self.events.record(events) }

    func retryPendingEvents() { events.retryPending() }

    func appendTrace(_ lines: [UInt8], droppedLines: Int, of pool: EntryID) {
        guard let name = poolNames()[pool] else { return }
        traces.append(lines, droppedLines: droppedLines, of: pool, named: name)
    }
}
