import CLinux
import CacheModel
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
            let built = try buildFromIndex(pool, in: host)
            host.logger.debug("pool \(pool): \(kind.rawValue) policy built from \(built) cached files")
            // The index's rows (names included) are freed by now, and lru, which builds
            // nothing, never held them: hand their pages back rather than keep them resident.
            if built >= Tunables.trimAfterLoadingEntries { malloc_trim(0) }
        } catch {
            host.logger.error("could not read the index to build pool \(pool)'s \(kind.rawValue) policy: \(error)")
        }
    }

    /// Reads the pool's cached files and installs the policy built from them; returns how
    /// many there were.
    private func buildFromIndex(_ pool: EntryID, in host: any EvictionHost) throws -> Int {
        let rows = try host.victimQueries.cachedFilesByAccess(pool: pool)
        replacement.finishBuild(of: pool, residents: rows.map {
            (id: $0.id, fingerprint: host.fingerprint(parent: $0.parent, name: $0.name), size: $0.size,
             costMilliseconds: $0.costMilliseconds)
        })
        return rows.count
    }

    /// The next victims of a pool's in-memory policy until `need` is met, or nil when the
    /// pool takes its victims from the index. The policy asks about each candidate in its
    /// order, and one that cannot go now stays in the policy, passed over as the policy passes
    /// over any (S3-FIFO and SIEVE move it on): a file pinned or being written, or one whose
    /// directory could not be read (offered again later). One whose directory is not loaded
    /// (policies are rebuilt from the index at mount; idle directories leave memory) ends the
    /// hold where the policy offered it: its directory loads outside the namespace lock, so no
    /// index read happens inside the hold, and the next hold judges it at that same place, so
    /// its place in the order does not depend on what memory held. A file that is
    /// gone by then is dropped. A `dryRun` chooses the same victims from a copy of the policy
    /// and changes nothing (a preview).
    func policyVictims(of pool: EntryID, need: Need, dryRun: Bool = false, in host: any EvictionHost) -> [EntryRecord]? {
        guard !replacement.usesIndex(pool) else { return nil }
        buildPolicyIfNeeded(of: pool, in: host)
        let time = host.now
        let costing = replacement.costing(of: pool)
        var copy: AnyReplacementPolicy? = dryRun ? replacement.withPolicy(of: pool) { $0 } : nil
        var remaining = need
        var victims: [EntryRecord] = []
        var loaded: Set<EntryID> = []
        var unreadable: Set<EntryID> = []
        // Taken out of the policy only to end a hold's search early: judged in the next hold.
        var heldBack: EntryID?
        while true {
            var notLoaded: Set<EntryID> = []
            var chosenInHold = 0
            var stepsInHold = 0
            var endsHold: EntryID?
            host.withCachedFiles { inMemory, _ in
                func choose(from policy: inout AnyReplacementPolicy) {
                    func isCachedFile(_ record: EntryRecord) -> Bool {
                        record.parent != nil && record.kind == .file && !record.persistent && record.pool == pool
                    }
                    func take(_ record: EntryRecord) {
                        victims.append(record)
                        remaining.take(record)
                        chosenInHold += 1
                    }
                    if let id = heldBack {
                        heldBack = nil
                        if let record = inMemory(id), isCachedFile(record) {
                            if host.isEvictable(record, at: time) && !remaining.isMet {
                                take(record)
                            } else {
                                policy.restore(id, fingerprint: host.fingerprint(of: record), size: record.size,
                                               cost: costing.cost(size: record.size,
                                                                  ownMilliseconds: record.costMilliseconds))
                            }
                        } else if unreadable.contains(id) || !loaded.contains(id) && inMemory(id) == nil {
                            policy.restore(id, fingerprint: 0, size: 0, cost: 1)
                        }
                    }
                    func mayGo(_ id: EntryID) -> Bool {
                        stepsInHold += 1
                        let record = inMemory(id)
                        let may: Bool
                        if let record {
                            may = !isCachedFile(record) || host.isEvictable(record, at: time)
                        } else if loaded.contains(id) {
                            // Gone once its directory was loaded: taken, then dropped below.
                            may = !unreadable.contains(id)
                        } else {
                            // Its directory is not loaded (not yet, or unloaded): judged in the
                            // next hold, once loaded, at the place the policy offers it now.
                            // Passed over, it would move in the policy's order because of
                            // what memory holds.
                            notLoaded.insert(id)
                            endsHold = id
                            return true
                        }
                        // A long search (past files not loaded, or pinned) ends the hold: the
                        // candidate it ended on is judged in the next one.
                        if !may && stepsInHold >= Tunables.policyStepsPerHold && endsHold == nil {
                            endsHold = id
                            return true
                        }
                        return may
                    }
                    while !remaining.isMet, notLoaded.count < Tunables.victimsSetAsidePerHold,
                          chosenInHold < Tunables.removalsPerHold, endsHold == nil,
                          let id = policy.evict(isEligible: mayGo) {
                        if id == endsHold { break }
                        // Neither gone nor another pool's: a cached file that may go now.
                        guard let record = inMemory(id), isCachedFile(record) else { continue }
                        take(record)
                    }
                }
                if copy != nil {
                    choose(from: &copy!)
                } else {
                    replacement.withPolicy(of: pool) { choose(from: &$0) }
                }
            }
            heldBack = endsHold
            // A hold chooses a batch at most, so a request waiting for the lock never waits
            // for a whole pass's choice.
            guard !remaining.isMet || heldBack != nil,
                  !notLoaded.isEmpty || chosenInHold == Tunables.removalsPerHold || heldBack != nil else { break }
            unreadable.formUnion(host.loadEntries(Array(notLoaded)))
            loaded.formUnion(notLoaded)
            yieldBetweenHolds()
        }
        return victims
    }

    /// Victims a removal did not take (read, pinned or renamed in between) go back to their
    /// policy, so no cached file is ever unknown to it. One memory does not hold is gone
    /// (a victim's directory was loaded when it was chosen).
    func giveBack(_ candidates: [EntryRecord], removed: Set<EntryID>, pool: EntryID, in host: any EvictionHost) {
        let kept = candidates.filter { !removed.contains($0.entryID) }
        guard !kept.isEmpty else { return }
        host.withCachedFiles { inMemory, _ in
            let stillCached = kept.compactMap { candidate -> EntryRecord? in
                guard let current = inMemory(candidate.entryID), current.parent != nil, current.kind == .file,
                      !current.persistent else { return nil }
                return current
            }
            let costing = replacement.costing(of: pool)
            replacement.withPolicy(of: pool) { policy in
                for record in stillCached {
                    policy.restore(record.entryID, fingerprint: host.fingerprint(of: record), size: record.size,
                                   cost: costing.cost(size: record.size, ownMilliseconds: record.costMilliseconds))
                }
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
                guard var settings = host.poolSettings()[change.pool], settings.eviction == .auto else { continue }
                settings.autoActive = change.to
                let pool = change.pool
                host.saveSettings(settings, of: pool)
                let figures = PolicyKind.allCases.compactMap { kind in
                    change.ratios[kind].map { "\(kind.rawValue) \(HitRatioText.format($0))" }
                }.joined(separator: ", ")
                let name = names[pool] ?? ""
                let reason = "auto (goal \(change.goal.rawValue)): \(change.from.rawValue) -> \(change.to.rawValue); "
                    + change.basis.said + "simulated \(change.goal.measureName) of recent reads: \(figures)"
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

extension PolicyRecommendation.Basis {
    /// What a `policy-changed` event says before the figures: nothing for a lead (the
    /// figures are the reason), the spread for a start from a size-aware policy.
    var said: String {
        switch self {
        case .lead: return ""
        case .sizesVary(let spread):
            return "file sizes vary (spread \(String(format: "%.2f", spread)) of their logarithms), "
                + "so a size-aware policy starts; "
        }
    }
}

extension PolicyKind {
    /// Why a file was chosen, for `evicted` events; a size- and cost-aware policy names the
    /// pool's goal, which sets what cost means.
    func reason(goal: CacheGoal) -> String {
        switch self {
        case .lru: return "least recently used"
        case .s3fifo: return "s3fifo: not read again since it entered its queue"
        case .sieve: return "sieve: not read since the hand last passed"
        case .tinylfu: return "tinylfu: least frequently read of the candidates"
        case .gdsf: return "gdsf (goal \(goal.rawValue)): lowest frequency × cost / size, aged by the clock"
        case .gdsfFiles: return "gdsf-files: lowest frequency / size, aged by the clock"
        }
    }
}
