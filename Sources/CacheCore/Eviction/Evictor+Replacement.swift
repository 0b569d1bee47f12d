import CachePolicy
import Foundation

/// Victims from a pool's in-memory replacement policy (`s3fifo`, `sieve`, `tinylfu`, `auto`);
/// a pool on `lru` takes them from the index's LRU order instead (see `Evictor+Passes`).
extension Evictor {
    /// How much a pass must free in a pool: bytes, files, or a number of victims.
    struct Need {
        var bytes: Int64 = 0
        var files: Int64 = 0

        var isMet: Bool { bytes <= 0 && files <= 0 }

        mutating func take(_ record: EntryRecord) {
            bytes -= record.size
            files -= 1
        }
    }

    /// Builds the in-memory policy of a pool that has none yet, from the index's cached
    /// files in LRU order: the read counts and queue places of the last mount are lost, the
    /// recency order is not. Runs on the evictor's thread, reading the index with no lock held.
    func buildPolicyIfNeeded(of pool: EntryID, in engine: CacheEngine) {
        guard let kind = engine.replacement.beginBuild(of: pool) else { return }
        // Changes before `beginBuild` are all in the index once the writer has committed
        // what was queued; those after it are replayed over the result.
        engine.flushAccessTimes()
        do {
            let rows = try engine.index.cachedFilesByAccess(pool: pool)
            engine.replacement.finishBuild(of: pool, residents: rows.map {
                (id: $0.id, fingerprint: Fingerprint.of(parent: $0.parent, name: $0.name))
            })
            engine.logger.debug("pool \(pool): \(kind.rawValue) policy built from \(rows.count) cached files")
        } catch {
            engine.replacement.abandonBuild(of: pool)
            engine.logger.error("could not read the index to build pool \(pool)'s \(kind.rawValue) policy: \(error)")
        }
    }

    /// The next victims of a pool's in-memory policy until `need` is met, or nil when the
    /// pool takes its victims from the index. Files that cannot go now (pinned, being
    /// written) are skipped by the policy itself and keep their place; one whose directory
    /// was not loaded yet is judged from its index row, and if it cannot go it comes back at
    /// the newest end of the order. Ids of files that are gone are dropped.
    func policyVictims(of pool: EntryID, need: Need, in engine: CacheEngine) -> [EntryRecord]? {
        guard !engine.replacement.usesIndex(pool) else { return nil }
        buildPolicyIfNeeded(of: pool, in: engine)
        let time = engine.now
        return engine.namespace.withLock { namespace -> [EntryRecord] in
            engine.replacement.withPolicy(of: pool) { policy -> [EntryRecord] in
                var remaining = need
                var victims: [EntryRecord] = []
                var spared: [EntryRecord] = []
                // Each id is asked for once per call: a spared file put back is not met again.
                while !remaining.isMet, let id = policy.evict(isEligible: { id in
                    namespace.inodes[id].map { engine.isEvictable($0.record, at: time) } ?? true
                }) {
                    let record: EntryRecord
                    do {
                        record = try namespace.record(id)
                    } catch CacheError.notFound {
                        continue
                    } catch {
                        engine.logger.error("pool \(pool): could not read entry \(id) chosen by its policy: \(error)")
                        continue
                    }
                    guard record.parent != nil, record.kind == .file, !record.persistent, record.pool == pool else {
                        continue
                    }
                    if engine.isEvictable(record, at: time) {
                        victims.append(record)
                        remaining.take(record)
                    } else {
                        spared.append(record)
                    }
                }
                for record in spared { policy.restore(record.entryID, fingerprint: engine.fingerprint(of: record)) }
                return victims
            } ?? []
        }
    }

    /// Victims a removal did not take (read, pinned or renamed in between) go back to their
    /// policy, so no cached file is ever unknown to it.
    func giveBack(_ candidates: [EntryRecord], removed: Set<EntryID>, pool: EntryID, in engine: CacheEngine) {
        let kept = candidates.filter { !removed.contains($0.entryID) }
        guard !kept.isEmpty else { return }
        engine.namespace.withLock { namespace in
            let stillCached = kept.compactMap { candidate -> EntryRecord? in
                guard let current = namespace.inodes[candidate.entryID]?.record, current.parent != nil,
                      current.kind == .file, !current.persistent else { return nil }
                return current
            }
            engine.replacement.withPolicy(of: pool) { policy in
                for record in stillCached { policy.restore(record.entryID, fingerprint: engine.fingerprint(of: record)) }
            }
        }
    }

    /// `auto`: pools whose simulations favour another policy switch to it, persist the
    /// choice and write a `policy-changed` event with the figures behind it.
    func switchAutoPools(in engine: CacheEngine) {
        let switches = engine.replacement.switchAutoPools()
        guard !switches.isEmpty else { return }
        let names = engine.poolNames()
        var events: [CacheEvent] = []
        for change in switches {
            let saved = engine.policies.withLock { policies -> PoolPolicy? in
                guard var policy = policies[change.pool], policy.eviction == .auto else { return nil }
                policy.autoActive = change.to
                policies[change.pool] = policy
                return policy
            }
            guard let saved else { continue }
            let pool = change.pool
            engine.writer.enqueue([.action { db in try IndexStore.savePolicy(saved, for: pool, in: db) }])
            let figures = PolicyKind.allCases.compactMap { kind in
                change.ratios[kind].map { "\(kind.rawValue) \(CacheEngine.formatRatio($0))" }
            }.joined(separator: ", ")
            let name = names[pool] ?? ""
            let reason = "auto: \(change.from.rawValue) -> \(change.to.rawValue); simulated hit ratios of recent reads: \(figures)"
            engine.logger.info("pool \(name): \(reason)")
            events.append(CacheEvent(time: engine.now, event: .policyChanged, pool: name, path: name, size: 0,
                                     reason: reason))
        }
        engine.events.record(events)
    }
}

extension PolicyKind {
    /// Why a file was chosen, for `evicted` events.
    var reason: String {
        switch self {
        case .lru: return "least recently used"
        case .s3fifo: return "s3fifo: not read again since it entered its queue"
        case .sieve: return "sieve: not read since the hand last passed"
        case .tinylfu: return "tinylfu: least frequently read of the candidates"
        }
    }
}
