import CachePolicy

/// The preview: which files a pass would remove, computed by the passes' own code from a
/// snapshot, changing nothing. A size pass right after a `.size` preview, with no read in
/// between, removes exactly the files it listed, in its order. It holds the pass lock, so it
/// waits for a pass in progress and no pass runs while it reads.
extension Evictor {
    func preview(of pool: EntryID, _ request: PreviewRequest, in host: any EvictionHost) throws -> [PreviewVictim] {
        try pass.withLock { _ in try previewInPass(of: pool, request, in: host) }
    }

    private func previewInPass(of pool: EntryID, _ request: PreviewRequest, in host: any EvictionHost) throws
        -> [PreviewVictim]
    {
        guard let policy = host.poolPolicies()[pool] else { return [] }
        // Changes other requests queued commit now (they would within the commit window): the
        // index then shows what memory does, but for reads not flushed yet, merged below.
        host.commitQueued()
        let inProgress = host.usageBeingWritten(in: pool)
        guard let need = need(for: request, policy: policy, usage: host.usage(of: pool), inProgress: inProgress) else {
            return []
        }
        let kind = replacement.report(of: pool)?.active ?? .lru
        if let chosen = policyVictims(of: pool, need: need, dryRun: true, in: host) {
            let pending = host.pendingAccessTimes()
            return chosen.map {
                PreviewVictim(record: $0, lastAccess: pending[$0.entryID] ?? $0.lastAccess, reason: kind.reason)
            }
        }
        return try leastRecentlyUsedPreview(of: pool, need: need, excluding: inProgress.entries, in: host)
    }

    /// What the pass would free for `request`, as `enforceLimitsInPass` computes it; nil
    /// when a size pass at that size would do nothing.
    private func need(for request: PreviewRequest, policy: PoolPolicy, usage: PoolUsage,
                      inProgress: (bytes: Int64, files: Int64, entries: Set<EntryID>)) -> Need? {
        switch request {
        case .next(let count):
            return Need(bytes: 0, files: Int64(count))
        case .free(let bytes):
            return Need(bytes: bytes, files: 0)
        case .size(let size):
            let settledBytes = usage.cachedBytes - inProgress.bytes
            let settledFiles = usage.cachedFiles - inProgress.files
            guard (size > 0 && settledBytes > size) || (policy.maxFiles > 0 && settledFiles > policy.maxFiles) else {
                return nil
            }
            let targetBytes = size / 100 * policy.lowWatermarkPercent
            let targetFiles = policy.maxFiles * policy.lowWatermarkPercent / 100
            return Need(bytes: size > 0 ? settledBytes - targetBytes : 0,
                        files: policy.maxFiles > 0 ? settledFiles - targetFiles : 0)
        }
    }

    /// The index's LRU order as a pass sees it after it flushed access times: files read
    /// since the last flush leave their place in the index's order for the one their new
    /// time gives them. Reads the index in pages; writes nothing.
    private func leastRecentlyUsedPreview(of pool: EntryID, need: Need, excluding writing: Set<EntryID>,
                                          in host: any EvictionHost) throws -> [PreviewVictim] {
        let time = host.now
        let pending = host.pendingAccessTimes()
        // The files of this pool read since the last flush, by their new time.
        var moved: [(lastAccess: Int64, record: EntryRecord)] = host.withCachedFiles { record, _ in
            pending.compactMap { id, readAt -> (Int64, EntryRecord)? in
                let found: EntryRecord?
                do {
                    found = try record(id)
                } catch {
                    host.logger.error("pool \(pool): could not read entry \(id) for a preview: \(error)")
                    return nil
                }
                guard let current = found, current.pool == pool, current.parent != nil, current.kind == .file,
                      readAt > current.lastAccess, !writing.contains(id), host.isEvictable(current, at: time)
                else { return nil }
                return (readAt, current)
            }
        }
        moved.sort { ($0.lastAccess, $0.record.entryID) < ($1.lastAccess, $1.record.entryID) }
        let movedIDs = Set(moved.map(\.record.entryID))
        var remaining = need
        var victims: [PreviewVictim] = []
        var nextMoved = 0
        var isMet: Bool { remaining.bytes <= 0 && remaining.files <= 0 }
        func take(_ record: EntryRecord, lastAccess: Int64) {
            victims.append(PreviewVictim(record: record, lastAccess: lastAccess, reason: PolicyKind.lru.reason))
            remaining.bytes -= record.size
            remaining.files -= 1
        }
        if !isMet {
            try host.victimQueries.forEachLeastRecentlyUsed(pool: pool, batch: Self.victimBatch) { page in
                let heldInMemory: Set<EntryID> = host.withCachedFiles { _, isEligibleInMemory in
                    Set(page.map(\.entryID).filter { isEligibleInMemory($0) == false })
                }
                for row in page {
                    while nextMoved < moved.count, !isMet,
                          (moved[nextMoved].lastAccess, moved[nextMoved].record.entryID) < (row.lastAccess, row.entryID) {
                        take(moved[nextMoved].record, lastAccess: moved[nextMoved].lastAccess)
                        nextMoved += 1
                    }
                    if isMet { return false }
                    // As the removal's own check would: a file pinned or being written since its
                    // row was committed stays. (A directory not loaded yet has nothing newer in memory.)
                    if movedIDs.contains(row.entryID) || writing.contains(row.entryID) || heldInMemory.contains(row.entryID) {
                        continue
                    }
                    take(row, lastAccess: row.lastAccess)
                }
                return !isMet
            }
        }
        while nextMoved < moved.count, remaining.bytes > 0 || remaining.files > 0 {
            take(moved[nextMoved].record, lastAccess: moved[nextMoved].lastAccess)
            nextMoved += 1
        }
        return victims
    }
}
