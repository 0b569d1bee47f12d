import CacheModel
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
        inPass(of: host) { enforceLimitsInPass(of: pool, in: host) }
    }

    private func enforceLimitsInPass(of pool: EntryID, in host: any EvictionHost) {
        guard let settings = host.poolSettings()[pool] else { return }
        let start = host.usage(of: pool)
        let overBytes = settings.maxSize > 0 && start.cachedBytes > settings.maxSize
        let overFiles = settings.maxFiles > 0 && start.cachedFiles > settings.maxFiles
        guard overBytes || overFiles else { return }
        let name = host.poolNames()[pool] ?? ""
        // Files still being written wait for their close: evicting for a file that may yet
        // be refused (EFBIG) would empty the pool for nothing. The first round counts them
        // from this same reading: a file whose create was still registering its handle here
        // and was counted as settled, then as being written, started a pass that stopped at
        // the limit instead of the low watermark, and its close, no longer over the limit,
        // asked for no other.
        var inProgress = host.usageBeingWritten(in: pool)
        // A unit counts as one file in max_files.
        let surplus: Int64
        do {
            surplus = overFiles ? Self.filesBeyondOnePerUnit(try host.units(of: pool, pending: [:], writing: []) ?? []) : 0
        } catch {
            host.logger.error("pool \(name): could not read its units from the index: \(error)")
            return
        }
        let settledBytes = start.cachedBytes - inProgress.bytes
        let settledFiles = start.cachedFiles - inProgress.files - surplus
        guard (settings.maxSize > 0 && settledBytes > settings.maxSize)
                || (settings.maxFiles > 0 && settledFiles > settings.maxFiles) else {
            host.logger.debug("pool \(name) over its limit only by \(inProgress.files) files being written or by units' files; evicting once they are closed")
            return
        }
        let limit = overBytes ? "max_size \(settings.maxSize)" : "max_files \(settings.maxFiles)"
        host.record([CacheEvent(time: host.now, event: .overLimit, pool: name, path: name,
                                size: start.cachedBytes, reason: "usage \(start.cachedBytes) bytes in \(start.cachedFiles) files over \(limit)")])
        let targetBytes = settings.maxSize / 100 * settings.lowWatermarkPercent
        let targetFiles = settings.maxFiles * settings.lowWatermarkPercent / 100
        host.flushAccessTimes()
        while !isStopping {
            let current = host.usage(of: pool)
            let units: [EvictionUnit]?
            do {
                units = try host.units(of: pool, pending: [:], writing: inProgress.entries)
            } catch {
                host.logger.error("pool \(name): could not read its units from the index: \(error)")
                return
            }
            let unitSurplus = units.map(Self.filesBeyondOnePerUnit) ?? 0
            var bytesToFree = settings.maxSize > 0 ? current.cachedBytes - inProgress.bytes - targetBytes : 0
            var filesToFree = settings.maxFiles > 0 ? current.cachedFiles - inProgress.files - unitSurplus - targetFiles : 0
            guard bytesToFree > 0 || filesToFree > 0 else { return }
            // Blocks of files held in blocks go first (see `BlockEviction`).
            if bytesToFree > 0, host.dropColdBlocks(of: pool, bytes: bytesToFree) > 0 { continue }
            host.logger.debug("pool \(name): \(current.cachedBytes) bytes in \(current.cachedFiles) files (\(inProgress.files) being written); freeing \(max(bytesToFree, 0)) bytes and \(max(filesToFree, 0)) files to reach the low watermark")
            var victims: [VictimGroup] = []
            let report = replacement.report(of: pool)
            let kind = report?.active ?? .lru
            let goal = report?.goal ?? .files
            let need = Need(bytes: bytesToFree, files: filesToFree)
            let chosen = policyVictims(of: pool, need: need, in: host)
            if let chosen {
                victims = units.map { groupingUnits(chosen, units: $0) } ?? chosen.map { .file($0, lastAccess: $0.lastAccess) }
            } else if let units {
                do {
                    victims = try leastRecentlyUsedOrder(of: pool, need: need, excluding: inProgress.entries,
                                                         pending: [:], units: units, in: host)
                } catch {
                    host.logger.error("pool \(name): could not read eviction candidates from the index: \(error)")
                    return
                }
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
                    victims.append(.file(candidate, lastAccess: candidate.lastAccess))
                    bytesToFree -= candidate.size
                    filesToFree -= 1
                }
            }
            host.logger.debug("pool \(name): \(victims.count) victims, \(kind.rawValue) order: \(victims.prefix(8).map { "\($0.files.first?.entryID ?? 0)\($0.unit == nil ? "" : " (a unit of \($0.files.count) files)") (\($0.bytes) bytes)" }.joined(separator: ", "))")
            let removed = remove(victims, as: .evicted, reason: "\(kind.reason(goal: goal)); pool over \(limit)",
                                 qualifies: host.isEvictable, in: host)
            if let chosen { giveBack(chosen, removed: removed.ids, pool: pool, in: host) }
            if removed.files == 0 { return }
            host.commitQueued()
            inProgress = host.usageBeingWritten(in: pool)
        }
    }

    /// How many more files the units hold than one each: a unit counts as one in max_files.
    static func filesBeyondOnePerUnit(_ units: [EvictionUnit]) -> Int64 {
        units.reduce(Int64(0)) { total, unit in
            total + Int64(max(unit.files.count { !$0.persistent } - 1, 0))
        }
    }

    // MARK: - Age

    /// Removes every file older than its max age (the pool's, or its own expiration).
    func sweepExpired(pools: [EntryID]? = nil, in host: any EvictionHost) {
        inPass(of: host) { sweepExpiredInPass(pools: pools, in: host) }
    }

    private func sweepExpiredInPass(pools: [EntryID]?, in host: any EvictionHost) {
        // A fold makes the index's read times current, so a batch of victims is not led by
        // files read since (each removal checks memory's time anyway, and keeps them). The
        // index's times are never newer than the true ones, so with no expiry due by the
        // index none is due at all: the periodic sweep (every pool, the backstop) then folds
        // nothing, which would cost an UPDATE per file read since the last fold.
        if pools != nil || !poolsWithExpiryDue(in: host).isEmpty { host.flushAccessTimes() }
        let time = host.now
        let settings = host.poolSettings()
        for pool in pools ?? Array(settings.keys) {
            let settings = settings[pool] ?? PoolSettings()
            // A unit's files expire together, once every one of them has: alone, each is skipped.
            guard let (units, members) = unitsAndMembers(of: pool, in: host) else { continue }
            if settings.maxAgeSeconds > 0 {
                let cutoff = time.nanoseconds - settings.maxAgeSeconds * 1_000_000_000
                removeInBatches(as: .expired, reason: "older than max_age \(settings.maxAgeSeconds)s", skipping: members,
                                qualifies: host.isExpired, in: host) { offset in
                    try host.victimQueries.olderThan(pool: pool, cutoff: cutoff, basis: settings.ageBasis,
                                                     limit: Self.victimBatch, offset: offset)
                }
            }
            removeInBatches(as: .expired, reason: "older than its own expiration", skipping: members,
                            qualifies: host.isExpired, in: host) { offset in
                try host.victimQueries.ownExpirationDue(pool: pool, at: time.nanoseconds, basis: settings.ageBasis,
                                                        limit: Self.victimBatch, offset: offset)
            }
            for unit in units where unit.mayGo && unit.files.allSatisfy({ host.isExpired($0, at: time) }) {
                _ = host.removeUnit(unit, as: .expired, reason: "every file of the unit is past its max age",
                                    qualifies: host.isExpired)
            }
        }
        host.commitQueued()
    }

    /// Removes files in batches until a batch comes back short or removes nothing (a file read
    /// since its row was written is no longer expired, say, and stays). Files of units are
    /// skipped (and paged past): units go whole, by their callers.
    private func removeInBatches(as kind: CacheEventKind, reason: String, skipping members: Set<EntryID>,
                                 qualifies: @escaping (EntryRecord, Timestamp) -> Bool, in host: any EvictionHost,
                                 batch: (_ offset: Int) throws -> [EntryRecord]) {
        var offset = 0
        while !isStopping {
            let candidates: [EntryRecord]
            do {
                candidates = try batch(offset)
            } catch {
                host.logger.error("could not read the files to remove (\(kind.rawValue)) from the index: \(error)")
                return
            }
            let alone = members.isEmpty ? candidates : candidates.filter { !members.contains($0.entryID) }
            offset += candidates.count - alone.count
            let removed = host.removeFiles(alone, as: kind, reason: reason, qualifies: qualifies)
            if candidates.count < Self.victimBatch || (removed.files == 0 && !alone.isEmpty) { break }
            host.commitQueued()
        }
    }

    /// The pools in which a file's expiry has come, by the index (whose read times are those
    /// of the last fold: a file read since may not be due after all; the sweep folds before
    /// it decides).
    func poolsWithExpiryDue(in host: any EvictionHost) -> [EntryID] {
        let time = host.now.nanoseconds
        return host.poolSettings().compactMap { pool, settings in
            do {
                guard let due = try host.victimQueries.earliestExpiry(pool: pool, maxAge: settings.maxAgeSeconds,
                                                                      basis: settings.ageBasis),
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
        inPass(of: host) { relievePressureInPass(extra: extra, in: host) }
    }

    private func relievePressureInPass(extra: Int64, in host: any EvictionHost) -> PressureOutcome {
        var flushed = false
        var removalsSettled = false
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
            // Files removed before the pass (a user's `rm` just before a write that met ENOSPC)
            // give their bytes back after their commit: that space counts before anything is
            // evicted for it, or the write would see ENOSPC while the disk is about to have room.
            if !removalsSettled {
                removalsSettled = true
                host.waitForIndex()
                continue
            }
            if !flushed {
                host.flushAccessTimes()
                flushed = true
            }
            let pools = host.poolSettings().filter { !cannotGive.contains($0.key) }.map { pool, settings in
                let usage = host.usage(of: pool).cachedBytes
                let floor = cannotGiveAboveFloor.contains(pool) ? max(usage, settings.minSize) : settings.minSize
                return PressureShares.Pool(id: pool, usage: usage, floor: floor)
            }
            let shares = PressureShares(needed: needed - space.available, pools: pools)
            if shares.bytes.isEmpty { return removedAny ? .stillShort : .nothingEvictable }
            let why = "store filesystem has \(space.available) bytes free, below \(needed)"
            var removedThisRound = 0
            for (pool, share) in shares.bytes.sorted(by: { $0.key < $1.key }) {
                let basis = shares.basis[pool] ?? 0
                let chosen: (victims: [VictimGroup], fromPolicy: [EntryRecord]?)
                do {
                    chosen = try pressureVictims(of: pool, bytes: share, within: shares.belowFloors ? nil : basis, in: host)
                } catch {
                    host.logger.error("could not read pressure candidates of pool \(pool) from the index: \(error)")
                    return .failed
                }
                let reason = shares.belowFloors
                    ? "\(why), and every pool is at its floor: this pool gives \(share) of the \(basis) bytes it holds"
                    : "\(why): this pool gives \(share) bytes, in proportion to the \(basis) it holds above its floor"
                let removed = remove(chosen.victims, as: .pressure, reason: reason, qualifies: host.isEvictable, in: host)
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
                                 in host: any EvictionHost) throws -> (victims: [VictimGroup], fromPolicy: [EntryRecord]?) {
        let ordered: [VictimGroup]
        let units = try host.units(of: pool, pending: [:], writing: [])
        let fromPolicy = policyVictims(of: pool, need: Need(bytes: bytes), in: host)
        if let fromPolicy {
            ordered = units.map { groupingUnits(fromPolicy, units: $0) } ?? fromPolicy.map { .file($0, lastAccess: $0.lastAccess) }
        } else if let units {
            ordered = try leastRecentlyUsedOrder(of: pool, need: Need(bytes: bytes), excluding: [], pending: [:],
                                                 units: units, in: host)
        } else {
            // An open file's bytes stay until its last close, so removing it frees nothing now:
            // asking for as many more candidates as there are open handles keeps a batch of
            // closed ones even when the least recently used files are all open.
            let candidates = try host.victimQueries.leastRecentlyUsed(
                pool: pool, limit: Self.victimBatch + host.openHandleCount, offset: 0)
            ordered = host.closedFiles(candidates).map { .file($0, lastAccess: $0.lastAccess) }
        }
        var left = bytes
        var taken: Int64 = 0
        var victims: [VictimGroup] = []
        for group in ordered where left > 0 {
            if let limit, taken + group.bytes > limit { break }
            victims.append(group)
            taken += group.bytes
            // A file frees whole blocks.
            left -= group.files.reduce(0) { $0 + max($1.size, 4096) }
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
        inPass(of: host) { clearInPass(pools: pools, in: host) }
    }

    private func clearInPass(pools: [EntryID], in host: any EvictionHost) {
        host.flushAccessTimes()
        for pool in pools {
            // A unit goes whole, unless one of its files is pinned (or otherwise kept).
            guard let (units, members) = unitsAndMembers(of: pool, in: host) else { continue }
            removeInBatches(as: .cleared, reason: "cleared", skipping: members, qualifies: host.isEvictable, in: host) { offset in
                try host.victimQueries.leastRecentlyUsed(pool: pool, limit: Self.victimBatch, offset: offset)
            }
            for unit in units where unit.mayGo {
                _ = host.removeUnit(unit, as: .cleared, reason: "cleared", qualifies: host.isEvictable)
            }
            // And every block of its files held in blocks that nobody is reading.
            _ = host.dropColdBlocks(of: pool, bytes: .max)
        }
    }
}
