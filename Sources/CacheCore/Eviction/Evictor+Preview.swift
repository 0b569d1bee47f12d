import CacheModel
import CachePolicy

/// The preview: which files a pass would remove, computed by the passes' own code from a
/// snapshot, changing nothing. A size pass right after a `.size` preview, with no read in
/// between, removes exactly the files it listed, in its order. It holds the pass lock, so it
/// waits for a pass in progress and no pass runs while it reads.
extension Evictor {
    func preview(of pool: EntryID, _ request: PreviewRequest, in host: any EvictionHost) throws -> [PreviewVictim] {
        try inPass(of: host) { try previewInPass(of: pool, request, in: host) }
    }

    private func previewInPass(of pool: EntryID, _ request: PreviewRequest, in host: any EvictionHost) throws
        -> [PreviewVictim]
    {
        guard let settings = host.poolSettings()[pool] else { return [] }
        // Changes other requests queued commit now (they would within the commit window): the
        // index then shows what memory does, but for reads not flushed yet, merged in.
        host.commitQueued()
        let inProgress = host.usageBeingWritten(in: pool)
        let pending = host.pendingAccessTimes()
        let units = try host.units(of: pool, pending: pending, writing: inProgress.entries)
        guard let need = need(for: request, settings: settings, usage: host.usage(of: pool), inProgress: inProgress,
                              unitSurplus: units.map(Self.filesBeyondOnePerUnit) ?? 0) else {
            return []
        }
        let report = replacement.report(of: pool)
        let kind = report?.active ?? .lru
        let reason = kind.reason(goal: report?.goal ?? .files)
        let groups: [VictimGroup]
        if let chosen = policyVictims(of: pool, need: need, dryRun: true, in: host) {
            groups = units.map { groupingUnits(chosen, units: $0) }
                ?? chosen.map { .file($0, lastAccess: pending[$0.entryID] ?? $0.lastAccess) }
        } else {
            groups = try leastRecentlyUsedOrder(of: pool, need: need, excluding: inProgress.entries, pending: pending,
                                                units: units ?? [], in: host)
        }
        return groups.map { group in
            guard let unit = group.unit else {
                return PreviewVictim(record: group.files[0], size: group.bytes, files: 1, lastAccess: group.lastAccess,
                                     reason: reason)
            }
            return PreviewVictim(record: unit.root, size: unit.cachedBytes, files: unit.files.count,
                                 lastAccess: unit.lastAccess, reason: "unit of \(unit.files.count) files; \(reason)")
        }
    }

    /// What the pass would free for `request`, as `enforceLimitsInPass` computes it; nil
    /// when a size pass at that size would do nothing.
    private func need(for request: PreviewRequest, settings: PoolSettings, usage: PoolUsage,
                      inProgress: (bytes: Int64, files: Int64, entries: Set<EntryID>), unitSurplus: Int64) -> Need? {
        switch request {
        case .next(let count):
            return Need(bytes: 0, files: Int64(count))
        case .free(let bytes):
            return Need(bytes: bytes, files: 0)
        case .size(let size):
            let settledBytes = usage.cachedBytes - inProgress.bytes
            let settledFiles = usage.cachedFiles - inProgress.files - unitSurplus
            guard (size > 0 && settledBytes > size) || (settings.maxFiles > 0 && settledFiles > settings.maxFiles) else {
                return nil
            }
            let targetBytes = size / 100 * settings.lowWatermarkPercent
            let targetFiles = settings.maxFiles * settings.lowWatermarkPercent / 100
            return Need(bytes: size > 0 ? settledBytes - targetBytes : 0,
                        files: settings.maxFiles > 0 ? settledFiles - targetFiles : 0)
        }
    }
}
