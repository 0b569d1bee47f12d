import Foundation
import Glibc

/// The evictor's passes: size and file-count limits, age, disk pressure, and the purge and
/// clear actions. Each holds `pass`, so two passes never decide from the same figures.
/// Victims come from partial indexes in least-recently-used order (O(log n) each) and go
/// through the engine's one removal seam (`removeFiles`), which re-checks each in memory;
/// no pass holds the namespace lock across index or disk I/O.
extension Evictor {
    /// Unpins files whose lease ended. It reads committed rows and does not wait for the
    /// writer: a lease set within the last commit window ends one round later.
    func endPinLeases(in engine: CacheEngine) {
        do {
            let time = engine.now.nanoseconds
            let ended = try engine.index.endedLeases(before: time)
            guard !ended.isEmpty else { return }
            var pools: Set<EntryID> = []
            engine.namespace.withLock { namespace in
                for id in ended {
                    guard let record = try? namespace.record(id), record.pinnedUntil > 0,
                          record.pinnedUntil <= time else { continue }
                    _ = try? engine.update(id, in: &namespace) { $0.pinnedUntil = 0 }
                    pools.insert(record.pool)
                }
            }
            for pool in pools { enforceLimits(of: pool, in: engine) }
        } catch {
            engine.logger.error("could not end pin leases: \(error)")
        }
    }

    // MARK: - Size and file count

    /// Evicts least recently used files until the pool is at its low watermark.
    func enforceLimits(of pool: EntryID, in engine: CacheEngine) {
        pass.withLock { _ in enforceLimitsInPass(of: pool, in: engine) }
    }

    private func enforceLimitsInPass(of pool: EntryID, in engine: CacheEngine) {
        guard let policy = engine.policies.withLock({ $0[pool] }) else { return }
        let start = engine.usage.usage(of: pool)
        let overBytes = policy.maxSize > 0 && start.cachedBytes > policy.maxSize
        let overFiles = policy.maxFiles > 0 && start.cachedFiles > policy.maxFiles
        guard overBytes || overFiles else { return }
        let name = engine.poolNames()[pool] ?? ""
        // Files still being written wait for their close: evicting for a file that may yet
        // be refused (EFBIG) would empty the pool for nothing.
        let writing = engine.usageBeingWritten(in: pool)
        let settledBytes = start.cachedBytes - writing.bytes
        let settledFiles = start.cachedFiles - writing.files
        guard (policy.maxSize > 0 && settledBytes > policy.maxSize)
                || (policy.maxFiles > 0 && settledFiles > policy.maxFiles) else {
            engine.logger.debug("pool \(name) over its limit only by \(writing.files) files being written; evicting once they are closed")
            return
        }
        let limit = overBytes ? "max_size \(policy.maxSize)" : "max_files \(policy.maxFiles)"
        engine.events.record([CacheEvent(time: engine.now, event: .overLimit, pool: name, path: name,
                                  size: start.cachedBytes, reason: "usage \(start.cachedBytes) bytes in \(start.cachedFiles) files over \(limit)")])
        let targetBytes = policy.maxSize / 100 * policy.lowWatermarkPercent
        let targetFiles = policy.maxFiles * policy.lowWatermarkPercent / 100
        engine.flushAccessTimes()
        while !isStopping {
            let current = engine.usage.usage(of: pool)
            let inProgress = engine.usageBeingWritten(in: pool)
            var bytesToFree = policy.maxSize > 0 ? current.cachedBytes - inProgress.bytes - targetBytes : 0
            var filesToFree = policy.maxFiles > 0 ? current.cachedFiles - inProgress.files - targetFiles : 0
            guard bytesToFree > 0 || filesToFree > 0 else { return }
            engine.logger.debug("pool \(name): \(current.cachedBytes) bytes in \(current.cachedFiles) files (\(inProgress.files) being written); freeing \(max(bytesToFree, 0)) bytes and \(max(filesToFree, 0)) files to reach the low watermark")
            var victims: [EntryRecord] = []
            let kind = engine.replacement.report(of: pool)?.active ?? .lru
            if let chosen = policyVictims(of: pool, need: Need(bytes: bytesToFree, files: filesToFree), in: engine) {
                victims = chosen
            } else {
                let limitOfBatch = Self.victimBatch + inProgress.entries.count
                let candidates: [EntryRecord]
                do {
                    candidates = try engine.index.leastRecentlyUsed(pool: pool, limit: limitOfBatch)
                        .filter { !inProgress.entries.contains($0.entryID) }
                } catch {
                    engine.logger.error("pool \(name): could not read eviction candidates from the index: \(error)")
                    return
                }
                for candidate in candidates where bytesToFree > 0 || filesToFree > 0 {
                    victims.append(candidate)
                    bytesToFree -= candidate.size
                    filesToFree -= 1
                }
            }
            engine.logger.debug("pool \(name): \(victims.count) victims, \(kind.rawValue) order: \(victims.prefix(8).map { "\($0.entryID) (\($0.size) bytes)" }.joined(separator: ", "))")
            let removed = engine.removeFiles(victims, as: .evicted, reason: "\(kind.reason); pool over \(limit)",
                                      qualifies: engine.isEvictable)
            giveBack(victims, removed: removed.ids, pool: pool, in: engine)
            if removed.files == 0 { return }
            engine.writer.flush()
        }
    }

    // MARK: - Age

    /// Removes every file older than its max age (the pool's, or its own expiration).
    func sweepExpired(pools: [EntryID]? = nil, in engine: CacheEngine) {
        pass.withLock { _ in sweepExpiredInPass(pools: pools, in: engine) }
    }

    private func sweepExpiredInPass(pools: [EntryID]?, in engine: CacheEngine) {
        engine.flushAccessTimes()
        let time = engine.now
        let chosen = pools ?? Array(engine.policies.withLock { $0.keys })
        for pool in chosen {
            let policy = engine.policies.withLock { $0[pool] } ?? PoolPolicy()
            if policy.maxAgeSeconds > 0 {
                let cutoff = time.nanoseconds - policy.maxAgeSeconds * 1_000_000_000
                removeExpired(in: engine, reason: "older than max_age \(policy.maxAgeSeconds)s") {
                    try engine.index.olderThan(pool: pool, cutoff: cutoff, basis: policy.ageBasis, limit: Self.victimBatch)
                }
            }
            removeExpired(in: engine, reason: "older than its own expiration") {
                try engine.index.ownExpirationDue(pool: pool, at: time.nanoseconds, basis: policy.ageBasis,
                                                  limit: Self.victimBatch)
            }
        }
        engine.writer.flush()
    }

    /// Removes batches of expired files until a batch comes back short or removes nothing
    /// (a file read since its row was written is no longer expired, and stays).
    private func removeExpired(in engine: CacheEngine, reason: String, batch: () throws -> [EntryRecord]) {
        while !isStopping {
            let candidates = (try? batch()) ?? []
            let removed = engine.removeFiles(candidates, as: .expired, reason: reason, qualifies: engine.isExpired)
            if candidates.count < Self.victimBatch || removed.files == 0 { break }
            engine.writer.flush()
        }
    }

    /// The pools in which a file's expiry has come, by the index (flushed access times are
    /// at most one flush old; the sweep flushes before it decides).
    func poolsWithExpiryDue(in engine: CacheEngine) -> [EntryID] {
        let time = engine.now.nanoseconds
        return engine.policies.withLock { $0 }.compactMap { pool, policy in
            guard let due = try? engine.index.earliestExpiry(pool: pool, maxAge: policy.maxAgeSeconds,
                                                             basis: policy.ageBasis),
                  due <= time else { return nil }
            return pool
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
    }

    /// Evicts least recently used files of all pools until the store's filesystem has
    /// `min_free` (plus `extra`) available.
    @discardableResult
    func relievePressure(extra: Int64 = 0, in engine: CacheEngine) -> PressureOutcome {
        pass.withLock { _ in relievePressureInPass(extra: extra, in: engine) }
    }

    private func relievePressureInPass(extra: Int64, in engine: CacheEngine) -> PressureOutcome {
        let minFree = MinFree.parse((try? engine.index.setting(MinFree.settingKey)) ?? "") ?? MinFree.defaultValue
        var flushed = false
        var removedAny = false
        while !isStopping {
            guard let stats = try? engine.statfs() else { return .nothingEvictable }
            let available = Int64(stats.availableBlocks * stats.fragmentSize)
            let needed = minFree.bytes(ofTotal: Int64(stats.blocks * stats.fragmentSize)) + extra
            guard available < needed else {
                if removedAny { engine.events.retryPending() }
                return .enoughSpace
            }
            if !flushed {
                engine.flushAccessTimes()
                flushed = true
            }
            // An open file's bytes stay until its last close, so removing it frees nothing now:
            // asking for as many more candidates as there are open handles keeps a batch of
            // closed ones even when the least recently used files are all open.
            let limit = Self.victimBatch + engine.handles.count
            let candidates = (try? engine.index.leastRecentlyUsed(pool: nil, limit: limit)) ?? []
            let closed = engine.namespace.withLock { namespace in
                candidates.filter { (namespace.inodes[$0.entryID]?.openHandles ?? 0) == 0 }
            }
            var shortfall = needed - available
            var victims: [EntryRecord] = []
            // The index's LRU order across pools says how much each pool gives; a pool with
            // a policy of its own gives that much in its policy's order.
            var fromPolicies: [EntryID: Need] = [:]
            for candidate in closed where shortfall > 0 {
                if engine.replacement.usesIndex(candidate.pool) {
                    victims.append(candidate)
                } else {
                    fromPolicies[candidate.pool, default: Need()].bytes += candidate.size
                }
                shortfall -= max(candidate.size, 4096)
            }
            var chosenByPolicies: [EntryID: [EntryRecord]] = [:]
            for (pool, need) in fromPolicies {
                let chosen = policyVictims(of: pool, need: need, in: engine) ?? []
                chosenByPolicies[pool] = chosen
                victims += chosen
            }
            let removed = engine.removeFiles(victims, as: .pressure,
                                      reason: "store filesystem has \(available) bytes free, below \(needed)",
                                      qualifies: engine.isEvictable)
            for (pool, chosen) in chosenByPolicies { giveBack(chosen, removed: removed.ids, pool: pool, in: engine) }
            if removed.files == 0 { return removedAny ? .stillShort : .nothingEvictable }
            removedAny = true
            // The free space is read again next: the bytes must be gone, not only the names.
            engine.waitForIndex()
        }
        return .nothingEvictable
    }

    // MARK: - Actions

    /// `user.cache.purge`: evict until within limits and drop expired files, now.
    func purge(pools: [EntryID], in engine: CacheEngine) {
        for pool in pools { enforceLimits(of: pool, in: engine) }
        sweepExpired(pools: pools, in: engine)
    }

    /// `user.cache.clear`: remove every cached file that is not pinned.
    func clear(pools: [EntryID], in engine: CacheEngine) {
        pass.withLock { _ in clearInPass(pools: pools, in: engine) }
    }

    private func clearInPass(pools: [EntryID], in engine: CacheEngine) {
        engine.flushAccessTimes()
        for pool in pools {
            while !isStopping {
                let batch = (try? engine.index.leastRecentlyUsed(pool: pool, limit: Self.victimBatch)) ?? []
                let removed = engine.removeFiles(batch, as: .cleared, reason: "cleared", qualifies: engine.isEvictable)
                if batch.isEmpty || removed.files == 0 { break }
                engine.writer.flush()
            }
        }
    }
}
