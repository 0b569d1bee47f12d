import Foundation
import Glibc

/// The evictor: size and file-count limits, age, disk pressure, and the purge and clear
/// actions. Victims come from partial indexes in least-recently-used order (O(log n) each).
extension CacheEngine {
    static let victimBatch = 256

    /// One round of the background worker.
    func runBackgroundRound() {
        let uptime = ProcessInfo.processInfo.systemUptime
        let due = schedule.withLock { schedule -> (flush: Bool, sweep: Bool, pressure: Bool, pools: Set<EntryID>) in
            let flush = uptime - schedule.lastFlush >= accessFlushSeconds
            let sweep = uptime - schedule.lastSweep >= sweepSeconds
            let pressure = schedule.pressureRequested || uptime - schedule.lastPressureCheck >= pressureCheckSeconds
            if flush { schedule.lastFlush = uptime }
            if sweep { schedule.lastSweep = uptime }
            if pressure { schedule.lastPressureCheck = uptime }
            schedule.pressureRequested = false
            let pools = schedule.poolsToEnforce
            schedule.poolsToEnforce = []
            return (flush, sweep, pressure, pools)
        }
        if due.flush {
            writer.enqueue(.setting(key: PoolCounters.settingKey, value: counters.withLock { $0 }.encoded))
            flushAccessTimes()
        }
        endPinLeases()
        for pool in due.pools { enforceLimits(of: pool) }
        if due.sweep { sweepExpired() }
        if due.pressure { relievePressure() }
    }

    /// Asks the worker to bring these pools within their limits now.
    func requestEnforcement(of pools: [EntryID]) {
        schedule.withLock { $0.poolsToEnforce.formUnion(pools) }
        worker.wake()
    }

    /// Tells the kernel about removals cachefs made itself, on the notification thread: a
    /// round of the evictor (a filesystem sync, say) never delays them.
    func deliverNotifications() {
        let pending = schedule.withLock { schedule in
            let taken = schedule.notifications
            schedule.notifications = []
            return taken
        }
        for item in pending {
            notifier.deleted(parent: item.parent, child: item.child, name: item.name)
        }
    }

    /// Unpins files whose lease ended. It reads committed rows and does not wait for the
    /// writer: a lease set within the last commit window ends one round later.
    private func endPinLeases() {
        do {
            let time = now.nanoseconds
            let ended = try index.endedLeases(before: time)
            guard !ended.isEmpty else { return }
            var pools: Set<EntryID> = []
            namespace.withLock { namespace in
                for id in ended {
                    guard let record = try? namespace.record(id), record.pinnedUntil > 0,
                          record.pinnedUntil <= time else { continue }
                    _ = try? update(id, in: &namespace) { $0.pinnedUntil = 0 }
                    pools.insert(record.pool)
                }
            }
            for pool in pools { enforceLimits(of: pool) }
        } catch {
            logger.error("could not end pin leases: \(error)")
        }
    }

    // MARK: - Size and file count

    /// Evicts least recently used files until the pool is at its low watermark.
    func enforceLimits(of pool: EntryID) {
        evictionPass.withLock { _ in enforceLimitsInPass(of: pool) }
    }

    private func enforceLimitsInPass(of pool: EntryID) {
        guard let policy = policies.withLock({ $0[pool] }) else { return }
        let start = usage.usage(of: pool)
        let overBytes = policy.maxSize > 0 && start.cachedBytes > policy.maxSize
        let overFiles = policy.maxFiles > 0 && start.cachedFiles > policy.maxFiles
        guard overBytes || overFiles else { return }
        let name = poolNames()[pool] ?? ""
        let limit = overBytes ? "max_size \(policy.maxSize)" : "max_files \(policy.maxFiles)"
        events.record([CacheEvent(time: now, event: .overLimit, pool: name, path: name,
                                  size: start.cachedBytes, reason: "usage \(start.cachedBytes) bytes in \(start.cachedFiles) files over \(limit)")])
        let targetBytes = policy.maxSize / 100 * policy.lowWatermarkPercent
        let targetFiles = policy.maxFiles * policy.lowWatermarkPercent / 100
        flushAccessTimes()
        while true {
            let current = usage.usage(of: pool)
            var bytesToFree = policy.maxSize > 0 ? current.cachedBytes - targetBytes : 0
            var filesToFree = policy.maxFiles > 0 ? current.cachedFiles - targetFiles : 0
            guard bytesToFree > 0 || filesToFree > 0 else { return }
            let candidates = (try? index.leastRecentlyUsed(pool: pool, limit: Self.victimBatch)) ?? []
            var victims: [EntryRecord] = []
            for candidate in candidates where bytesToFree > 0 || filesToFree > 0 {
                victims.append(candidate)
                bytesToFree -= candidate.size
                filesToFree -= 1
            }
            let removed = removeFiles(victims, as: .evicted, reason: "least recently used; pool over \(limit)",
                                      qualifies: isEvictable)
            if removed.files == 0 { return }
            writer.flush()
        }
    }

    // MARK: - Age

    /// Removes every file older than its max age (the pool's, or its own expiration).
    func sweepExpired(pools: [EntryID]? = nil) {
        evictionPass.withLock { _ in sweepExpiredInPass(pools: pools) }
    }

    private func sweepExpiredInPass(pools: [EntryID]?) {
        flushAccessTimes()
        let time = now
        let chosen = pools ?? Array(policies.withLock { $0.keys })
        for pool in chosen {
            let policy = policies.withLock { $0[pool] } ?? PoolPolicy()
            guard policy.maxAgeSeconds > 0 else { continue }
            let cutoff = time.nanoseconds - policy.maxAgeSeconds * 1_000_000_000
            while true {
                let batch = (try? index.olderThan(pool: pool, cutoff: cutoff, basis: policy.ageBasis,
                                                  limit: Self.victimBatch)) ?? []
                let removed = removeFiles(batch, as: .expired, reason: "older than max_age \(policy.maxAgeSeconds)s",
                                          qualifies: isExpired)
                if batch.count < Self.victimBatch || removed.files == 0 { break }
                writer.flush()
            }
        }
        var after: EntryID = 0
        while let batch = try? index.withOwnExpiration(after: after, limit: Self.victimBatch), let last = batch.last {
            after = last.entryID
            let expired = batch.filter { chosen.contains($0.pool) && isExpired($0, at: time) }
            removeFiles(expired, as: .expired, reason: "older than its own expiration", qualifies: isExpired)
        }
        writer.flush()
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
    func relievePressure(extra: Int64 = 0) -> PressureOutcome {
        evictionPass.withLock { _ in relievePressureInPass(extra: extra) }
    }

    private func relievePressureInPass(extra: Int64) -> PressureOutcome {
        let minFree = MinFree.parse((try? index.setting(MinFree.settingKey)) ?? "") ?? MinFree.defaultValue
        var flushed = false
        var removedAny = false
        while true {
            guard let stats = try? statfs() else { return .nothingEvictable }
            let available = Int64(stats.availableBlocks * stats.fragmentSize)
            let needed = minFree.bytes(ofTotal: Int64(stats.blocks * stats.fragmentSize)) + extra
            guard available < needed else {
                if removedAny { events.retryPending() }
                return .enoughSpace
            }
            if !flushed {
                flushAccessTimes()
                flushed = true
            }
            let candidates = (try? index.leastRecentlyUsed(pool: nil, limit: Self.victimBatch)) ?? []
            // An open file's bytes stay until its last close, so removing it frees nothing now.
            let closed = namespace.withLock { namespace in
                candidates.filter { (namespace.inodes[$0.entryID]?.openHandles ?? 0) == 0 }
            }
            var shortfall = needed - available
            var victims: [EntryRecord] = []
            for candidate in closed where shortfall > 0 {
                victims.append(candidate)
                shortfall -= max(candidate.size, 4096)
            }
            let removed = removeFiles(victims, as: .pressure,
                                      reason: "store filesystem has \(available) bytes free, below \(needed)",
                                      qualifies: isEvictable)
            if removed.files == 0 { return removedAny ? .stillShort : .nothingEvictable }
            removedAny = true
            writer.flush()
        }
    }

    // MARK: - Actions

    /// `user.cache.purge`: evict until within limits and drop expired files, now.
    func purge(pools: [EntryID]) {
        for pool in pools { enforceLimits(of: pool) }
        sweepExpired(pools: pools)
    }

    /// `user.cache.clear`: remove every cached file that is not pinned.
    func clear(pools: [EntryID]) {
        evictionPass.withLock { _ in clearInPass(pools: pools) }
    }

    private func clearInPass(pools: [EntryID]) {
        flushAccessTimes()
        for pool in pools {
            while true {
                let batch = (try? index.leastRecentlyUsed(pool: pool, limit: Self.victimBatch)) ?? []
                let removed = removeFiles(batch, as: .cleared, reason: "cleared", qualifies: isEvictable)
                if batch.isEmpty || removed.files == 0 { break }
                writer.flush()
            }
        }
    }
}
