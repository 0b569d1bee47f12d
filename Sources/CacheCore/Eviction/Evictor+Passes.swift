import Foundation

/// The evictor's passes: size and file-count limits, age, disk pressure, and the purge and
/// clear actions. Each holds `pass`, so two passes never decide from the same figures.
/// Victims come from the pool's replacement policy (the index's LRU order, O(log n) each,
/// or a policy in memory) and go through the host's one removal seam (`removeFiles`),
/// which re-checks each under the namespace lock. An index the evictor cannot read ends
/// the pass with an error in the log, never with "nothing to evict".
extension Evictor {
    /// Unpins files whose lease ended. It reads committed rows and does not wait for the
    /// writer: a lease set within the last commit window ends one round later.
    func endPinLeases(in host: any EvictionHost) {
        let time = host.now
        let ended: [EntryID]
        do {
            ended = try host.victimQueries.endedLeases(before: time.nanoseconds)
        } catch {
            host.logger.error("could not read ended pin leases from the index: \(error)")
            return
        }
        guard !ended.isEmpty else { return }
        for pool in host.endPinLeases(of: ended, at: time) { enforceLimits(of: pool, in: host) }
    }

    // MARK: - Size and file count

    /// Evicts files in the pool's policy order until the pool is at its low watermark.
    func enforceLimits(of pool: EntryID, in host: any EvictionHost) {
        pass.withLock { _ in enforceLimitsInPass(of: pool, in: host) }
    }

    private func enforceLimitsInPass(of pool: EntryID, in host: any EvictionHost) {
        guard let policy = host.poolPolicies()[pool] else { return }
        let start = host.usage(of: pool)
        let overBytes = policy.maxSize > 0 && start.cachedBytes > policy.maxSize
        let overFiles = policy.maxFiles > 0 && start.cachedFiles > policy.maxFiles
        guard overBytes || overFiles else { return }
        let name = host.poolNames()[pool] ?? ""
        // Files still being written wait for their close: evicting for a file that may yet
        // be refused (EFBIG) would empty the pool for nothing.
        let writing = host.usageBeingWritten(in: pool)
        let settledBytes = start.cachedBytes - writing.bytes
        let settledFiles = start.cachedFiles - writing.files
        guard (policy.maxSize > 0 && settledBytes > policy.maxSize)
                || (policy.maxFiles > 0 && settledFiles > policy.maxFiles) else {
            host.logger.debug("pool \(name) over its limit only by \(writing.files) files being written; evicting once they are closed")
            return
        }
        let limit = overBytes ? "max_size \(policy.maxSize)" : "max_files \(policy.maxFiles)"
        host.record([CacheEvent(time: host.now, event: .overLimit, pool: name, path: name,
                                size: start.cachedBytes, reason: "usage \(start.cachedBytes) bytes in \(start.cachedFiles) files over \(limit)")])
        let targetBytes = policy.maxSize / 100 * policy.lowWatermarkPercent
        let targetFiles = policy.maxFiles * policy.lowWatermarkPercent / 100
        host.flushAccessTimes()
        while !isStopping {
            let current = host.usage(of: pool)
            let inProgress = host.usageBeingWritten(in: pool)
            var bytesToFree = policy.maxSize > 0 ? current.cachedBytes - inProgress.bytes - targetBytes : 0
            var filesToFree = policy.maxFiles > 0 ? current.cachedFiles - inProgress.files - targetFiles : 0
            guard bytesToFree > 0 || filesToFree > 0 else { return }
            host.logger.debug("pool \(name): \(current.cachedBytes) bytes in \(current.cachedFiles) files (\(inProgress.files) being written); freeing \(max(bytesToFree, 0)) bytes and \(max(filesToFree, 0)) files to reach the low watermark")
            var victims: [EntryRecord] = []
            let kind = replacement.report(of: pool)?.active ?? .lru
            if let chosen = policyVictims(of: pool, need: Need(bytes: bytesToFree, files: filesToFree), in: host) {
                victims = chosen
            } else {
                let candidates: [EntryRecord]
                do {
                    candidates = try host.victimQueries.leastRecentlyUsed(
                        pool: pool, limit: Self.victimBatch + inProgress.entries.count, offset: 0)
                } catch {
                    host.logger.error("pool \(name): could not read eviction candidates from the index: \(error)")
                    return
                }
                for candidate in candidates where (bytesToFree > 0 || filesToFree > 0)
                    && !inProgress.entries.contains(candidate.entryID) {
                    victims.append(candidate)
                    bytesToFree -= candidate.size
                    filesToFree -= 1
                }
            }
            host.logger.debug("pool \(name): \(victims.count) victims, \(kind.rawValue) order: \(victims.prefix(8).map { "\($0.entryID) (\($0.size) bytes)" }.joined(separator: ", "))")
            let removed = host.removeFiles(victims, as: .evicted, reason: "\(kind.reason); pool over \(limit)",
                                           qualifies: host.isEvictable)
            giveBack(victims, removed: removed.ids, pool: pool, in: host)
            if removed.files == 0 { return }
            host.commitQueued()
        }
    }

    // MARK: - Age

    /// Removes every file older than its max age (the pool's, or its own expiration).
    func sweepExpired(pools: [EntryID]? = nil, in host: any EvictionHost) {
        pass.withLock { _ in sweepExpiredInPass(pools: pools, in: host) }
    }

    private func sweepExpiredInPass(pools: [EntryID]?, in host: any EvictionHost) {
        host.flushAccessTimes()
        let time = host.now
        let policies = host.poolPolicies()
        for pool in pools ?? Array(policies.keys) {
            let policy = policies[pool] ?? PoolPolicy()
            if policy.maxAgeSeconds > 0 {
                let cutoff = time.nanoseconds - policy.maxAgeSeconds * 1_000_000_000
                removeExpired(in: host, reason: "older than max_age \(policy.maxAgeSeconds)s") {
                    try host.victimQueries.olderThan(pool: pool, cutoff: cutoff, basis: policy.ageBasis,
                                                     limit: Self.victimBatch)
                }
            }
            removeExpired(in: host, reason: "older than its own expiration") {
                try host.victimQueries.ownExpirationDue(pool: pool, at: time.nanoseconds, basis: policy.ageBasis,
                                                        limit: Self.victimBatch)
            }
        }
        host.commitQueued()
    }

    /// Removes batches of expired files until a batch comes back short or removes nothing
    /// (a file read since its row was written is no longer expired, and stays).
    private func removeExpired(in host: any EvictionHost, reason: String, batch: () throws -> [EntryRecord]) {
        while !isStopping {
            let candidates: [EntryRecord]
            do {
                candidates = try batch()
            } catch {
                host.logger.error("could not read expired files from the index: \(error)")
                return
            }
            let removed = host.removeFiles(candidates, as: .expired, reason: reason, qualifies: host.isExpired)
            if candidates.count < Self.victimBatch || removed.files == 0 { break }
            host.commitQueued()
        }
    }

    /// The pools in which a file's expiry has come, by the index (flushed access times are
    /// at most one flush old; the sweep flushes before it decides).
    func poolsWithExpiryDue(in host: any EvictionHost) -> [EntryID] {
        let time = host.now.nanoseconds
        return host.poolPolicies().compactMap { pool, policy in
            do {
                guard let due = try host.victimQueries.earliestExpiry(pool: pool, maxAge: policy.maxAgeSeconds,
                                                                      basis: policy.ageBasis),
                      due <= time else { return nil }
                return pool
            } catch {
                host.logger.error("could not read pool \(pool)'s next expiry from the index: \(error)")
                return nil
            }
        }
    }

    // MARK: - Disk pressure

    /// What a pressure pass ended with.
    enum PressureOutcome {
        /// The store's filesystem has what was asked for.
        case enoughSpace
        /// Files were removed, but it is still short (someone else wrote meanwhile).
        case stillShort
        /// Nothing left to remove: every remaining file is pinned, persistent or open.
        case nothingEvictable
        /// Free space or the candidates could not be read (logged): nothing was decided.
        case failed
    }

    /// Evicts cached files until the store's filesystem has `min_free` (plus `extra`)
    /// available. ``PressureShares`` says how much each pool gives (floors first); each pool
    /// gives in its own policy's order, and while pools are above their floors, none gives a
    /// file that would take it below its own. A pool that gives nothing (what it holds is
    /// pinned or open, or its next victim would cross its floor) counts as at its floor for
    /// the pass's later rounds, and then, if it gives nothing from below it either, as empty,
    /// so the others make up for it.
    @discardableResult
    func relievePressure(extra: Int64 = 0, in host: any EvictionHost) -> PressureOutcome {
        pass.withLock { _ in relievePressureInPass(extra: extra, in: host) }
    }

    private func relievePressureInPass(extra: Int64, in host: any EvictionHost) -> PressureOutcome {
        var flushed = false
        var removedAny = false
        var cannotGiveAboveFloor: Set<EntryID> = []
        var cannotGive: Set<EntryID> = []
        while !isStopping {
            let space: (available: Int64, total: Int64)
            let needed: Int64
            do {
                space = try host.freeSpace()
                needed = try host.minFree().bytes(ofTotal: space.total) + extra
            } catch {
                host.logger.error("could not read the store's free space or min_free: \(error)")
                return .failed
            }
            guard space.available < needed else {
                if removedAny { host.retryPendingEvents() }
                return .enoughSpace
            }
            if !flushed {
                host.flushAccessTimes()
                flushed = true
            }
            let pools = host.poolPolicies().filter { !cannotGive.contains($0.key) }.map { pool, policy in
                let usage = host.usage(of: pool).cachedBytes
                let floor = cannotGiveAboveFloor.contains(pool) ? max(usage, policy.minSize) : policy.minSize
                return PressureShares.Pool(id: pool, usage: usage, floor: floor)
            }
            let shares = PressureShares(needed: needed - space.available, pools: pools)
            if shares.bytes.isEmpty { return removedAny ? .stillShort : .nothingEvictable }
            let why = "store filesystem has \(space.available) bytes free, below \(needed)"
            var removedThisRound = 0
            for (pool, share) in shares.bytes.sorted(by: { $0.key < $1.key }) {
                let basis = shares.basis[pool] ?? 0
                let chosen: (victims: [EntryRecord], fromPolicy: [EntryRecord]?)
                do {
                    chosen = try pressureVictims(of: pool, bytes: share, within: shares.belowFloors ? nil : basis, in: host)
                } catch {
                    host.logger.error("could not read pressure candidates of pool \(pool) from the index: \(error)")
                    return .failed
                }
                let reason = shares.belowFloors
                    ? "\(why), and every pool is at its floor: this pool gives \(share) of the \(basis) bytes it holds"
                    : "\(why): this pool gives \(share) bytes, in proportion to the \(basis) it holds above its floor"
                let removed = host.removeFiles(chosen.victims, as: .pressure, reason: reason, qualifies: host.isEvictable)
                if let fromPolicy = chosen.fromPolicy { giveBack(fromPolicy, removed: removed.ids, pool: pool, in: host) }
                if removed.files == 0 {
                    if shares.belowFloors { cannotGive.insert(pool) } else { cannotGiveAboveFloor.insert(pool) }
                }
                removedThisRound += removed.files
            }
            guard removedThisRound > 0 else { continue }
            removedAny = true
            // The free space is read again next: the bytes must be gone, not only the names.
            host.waitForIndex()
        }
        return .nothingEvictable
    }

    /// A pool's next victims worth `bytes`, in its policy's order (`lru`: the index's), cut
    /// before the first that would take more than `within` bytes in all (what the pool holds
    /// above its floor). What the policy chose comes too, for those not taken to go back.
    private func pressureVictims(of pool: EntryID, bytes: Int64, within limit: Int64?,
                                 in host: any EvictionHost) throws -> (victims: [EntryRecord], fromPolicy: [EntryRecord]?) {
        let ordered: [EntryRecord]
        let fromPolicy = policyVictims(of: pool, need: Need(bytes: bytes), in: host)
        if let fromPolicy {
            ordered = fromPolicy
        } else {
            // An open file's bytes stay until its last close, so removing it frees nothing now:
            // asking for as many more candidates as there are open handles keeps a batch of
            // closed ones even when the least recently used files are all open.
            let candidates = try host.victimQueries.leastRecentlyUsed(
                pool: pool, limit: Self.victimBatch + host.openHandleCount, offset: 0)
            ordered = host.closedFiles(candidates)
        }
        var left = bytes
        var taken: Int64 = 0
        var victims: [EntryRecord] = []
        for candidate in ordered where left > 0 {
            if let limit, taken + candidate.size > limit { break }
            victims.append(candidate)
            taken += candidate.size
            // A file frees whole blocks.
            left -= max(candidate.size, 4096)
        }
        return (victims, fromPolicy)
    }

    // MARK: - Actions

    /// `user.cache.purge`: evict until within limits and drop expired files, now.
    func purge(pools: [EntryID], in host: any EvictionHost) {
        for pool in pools { enforceLimits(of: pool, in: host) }
        sweepExpired(pools: pools, in: host)
    }

    /// `user.cache.clear`: remove every cached file that is not pinned.
    func clear(pools: [EntryID], in host: any EvictionHost) {
        pass.withLock { _ in clearInPass(pools: pools, in: host) }
    }

    private func clearInPass(pools: [EntryID], in host: any EvictionHost) {
        host.flushAccessTimes()
        for pool in pools {
            while !isStopping {
                let batch: [EntryRecord]
                do {
                    batch = try host.victimQueries.leastRecentlyUsed(pool: pool, limit: Self.victimBatch, offset: 0)
                } catch {
                    host.logger.error("could not read files to clear from the index: \(error)")
                    return
                }
                let removed = host.removeFiles(batch, as: .cleared, reason: "cleared", qualifies: host.isEvictable)
                if batch.isEmpty || removed.files == 0 { break }
                host.commitQueued()
            }
        }
    }
}
