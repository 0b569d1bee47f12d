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
    func buildPolicyIfNeeded(of pool: EntryID, in host: any EvictionHost) {
        guard let kind = replacement.kindToBuild(of: pool) else { return }
        // What was queued is in the index once the writer committed it; changes since the
        // pool chose its policy are replayed over the result.
        host.flushAccessTimes()
        do {
            let rows = try host.victimQueries.cachedFilesByAccess(pool: pool)
            replacement.finishBuild(of: pool, residents: rows.map {
                (id: $0.id, fingerprint: host.fingerprint(parent: $0.parent, name: $0.name))
            })
            host.logger.debug("pool \(pool): \(kind.rawValue) policy built from \(rows.count) cached files")
        } catch {
            host.logger.error("could not read the index to build pool \(pool)'s \(kind.rawValue) policy: \(error)")
        }
    }

    /// The next victims of a pool's in-memory policy until `need` is met, or nil when the
    /// pool takes its victims from the index. Files that cannot go now (pinned, being
    /// written) are skipped by the policy itself and keep their place; one whose directory
    /// was not loaded yet is judged from its index row, and if it cannot go it comes back at
    /// the newest end of the order. Ids of files that are gone are dropped. Records are read
    /// while the policy judges its candidates, so one that cannot be read is never taken out
    /// of the policy. A `dryRun` chooses the same victims from a copy of the policy and
    /// changes nothing (a preview).
    func policyVictims(of pool: EntryID, need: Need, dryRun: Bool = false, in host: any EvictionHost) -> [EntryRecord]? {
        guard !replacement.usesIndex(pool) else { return nil }
        buildPolicyIfNeeded(of: pool, in: host)
        let time = host.now
        return host.withCachedFiles { record, isEligibleInMemory -> [EntryRecord] in
            func choose(from policy: inout AnyReplacementPolicy) -> [EntryRecord] {
                var remaining = need
                var victims: [EntryRecord] = []
                var spared: [EntryRecord] = []
                // The records of the candidates the policy judged (nil: gone), and those that
                // could not be read: the policy keeps these, so a later pass finds them again.
                var read: [EntryID: EntryRecord?] = [:]
                var unreadable: Set<EntryID> = []
                func mayGo(_ id: EntryID) -> Bool {
                    guard isEligibleInMemory(id) != false, !unreadable.contains(id) else { return false }
                    do {
                        read[id] = .some(try record(id))
                        return true
                    } catch {
                        unreadable.insert(id)
                        host.logger.error("pool \(pool): could not read entry \(id) chosen by its policy; it stays in the policy: \(error)")
                        return false
                    }
                }
                // Each id is asked for once per call: a spared file put back is not met again.
                while !remaining.isMet, let id = policy.evict(isEligible: mayGo) {
                    guard let found = read[id], let record = found else { continue }
                    guard record.parent != nil, record.kind == .file, !record.persistent, record.pool == pool else {
                        continue
                    }
                    if host.isEvictable(record, at: time) {
                        victims.append(record)
                        remaining.take(record)
                    } else {
                        spared.append(record)
                    }
                }
                for record in spared { policy.restore(record.entryID, fingerprint: host.fingerprint(of: record)) }
                return victims
            }
            return replacement.withPolicy(of: pool) { policy -> [EntryRecord] in
                guard dryRun else { return choose(from: &policy) }
                var copy = policy
                return choose(from: &copy)
            } ?? []
        }
    }

    /// Victims a removal did not take (read, pinned or renamed in between) go back to their
    /// policy, so no cached file is ever unknown to it.
    func giveBack(_ candidates: [EntryRecord], removed: Set<EntryID>, pool: EntryID, in host: any EvictionHost) {
        let kept = candidates.filter { !removed.contains($0.entryID) }
        guard !kept.isEmpty else { return }
        host.withCachedFiles { record, _ in
            let stillCached = kept.compactMap { candidate -> EntryRecord? in
                let current: EntryRecord?
                do {
                    current = try record(candidate.entryID)
                } catch {
                    host.logger.error("pool \(pool): could not read entry \(candidate.entryID) to give it back to its policy: \(error)")
                    return nil
                }
                guard let current, current.parent != nil, current.kind == .file, !current.persistent else { return nil }
                return current
            }
            replacement.withPolicy(of: pool) { policy in
                for record in stillCached { policy.restore(record.entryID, fingerprint: host.fingerprint(of: record)) }
            }
        }
    }

    /// `auto`: pools whose simulations favour another policy switch to it, persist the
    /// choice and write a `policy-changed` event with the figures behind it. The switch reads
    /// the pool's policy and saves it whole, so it holds pool changes throughout: a setfattr
    /// of the same pool runs wholly before or after it, and neither change is lost.
    func switchAutoPools(in host: any EvictionHost) {
        let events = host.withPoolChangesHeld { () -> [CacheEvent] in
            let switches = replacement.switchAutoPools()
            guard !switches.isEmpty else { return [] }
            let names = host.poolNames()
            var events: [CacheEvent] = []
            for change in switches {
                guard var policy = host.poolPolicies()[change.pool], policy.eviction == .auto else { continue }
                policy.autoActive = change.to
                let pool = change.pool
                host.savePolicy(policy, of: pool)
                let figures = PolicyKind.allCases.compactMap { kind in
                    change.ratios[kind].map { "\(kind.rawValue) \(HitRatioText.format($0))" }
                }.joined(separator: ", ")
                let name = names[pool] ?? ""
                let reason = "auto: \(change.from.rawValue) -> \(change.to.rawValue); simulated hit ratios of recent reads: \(figures)"
                events.append(CacheEvent(time: host.now, event: .policyChanged, pool: name, path: name, size: 0,
                                         reason: reason))
            }
            return events
        }
        guard !events.isEmpty else { return }
        for event in events { host.logger.info("pool \(event.pool): \(event.reason)") }
        host.record(events)
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
