import Foundation
import Glibc

/// What the read-only and readable `user.cache.*` attributes show: states, expiry, figures.
extension CacheEngine {
    func place(of record: EntryRecord) -> CacheAttribute.Place {
        if record.entryID == WellKnownEntry.root { return .root }
        if record.isPool { return .pool }
        if record.kind.isMetadataOnly { return .nameOnly }
        return record.kind == .directory ? .directory : .file
    }

    func cacheAttributeValue(_ attribute: CacheAttribute, of record: EntryRecord) -> String {
        let time = now
        switch attribute {
        case .persistent: return record.persistent ? "1" : "0"
        case .pinned:
            switch PinState(storedValue: record.pinnedUntil) {
            case .unpinned: return "0"
            case .forever: return "1"
            case .until(let end): return end > time ? ValueParsing.formatRFC3339(end) : "0"
            }
        case .expiration: return String(record.expiration)
        case .lastAccess: return ValueParsing.formatRFC3339(Timestamp(nanoseconds: lastAccess(of: record)))
        case .state: return state(of: record, at: time).rawValue
        case .expiresAt: return expiry(of: record).map(ValueParsing.formatRFC3339) ?? ""
        case .maxSize: return String(policy(of: record).maxSize)
        case .maxAge: return String(policy(of: record).maxAgeSeconds)
        case .ageBasis: return policy(of: record).ageBasis.rawValue
        case .maxFiles: return String(policy(of: record).maxFiles)
        case .lowWatermark: return String(policy(of: record).lowWatermarkPercent)
        case .origin: return policy(of: record).origin
        case .negativeTTL: return String(policy(of: record).negativeTTLSeconds)
        case .maxFetches: return String(policy(of: record).maxFetches)
        case .eviction: return policy(of: record).eviction.rawValue
        case .trace: return policy(of: record).recordsTrace ? "1" : "0"
        case .evictionActive: return (evictor.replacement.report(of: record.entryID)?.active ?? .lru).rawValue
        case .hitRatio: return evictor.replacement.report(of: record.entryID)?.recentHitRatio.map(HitRatioText.format) ?? ""
        case .hitRatioCurve: return evictor.replacement.report(of: record.entryID).map(Self.curveValue) ?? ""
        case .fetching: return fetchingValue(of: record.entryID)
        case .etag, .lastModified:
            // Shown empty when the index cannot say: these two attributes are informational.
            return (try? index.xattr(record.entryID, name: Data(attribute.fullName.utf8))).flatMap { $0 }
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
        // The value in force is the default when the index cannot say (as the evictor assumes).
        case .minFree: return (try? index.setting(MinFree.settingKey)) ?? MinFree.defaultValue.description
        case .store: return layout.root
        case .warnings: return warnings.all.joined(separator: "\n")
        case .oldestAccess:
            return oldestAccess(inPool: record.entryID).map { ValueParsing.formatRFC3339(Timestamp(nanoseconds: $0)) } ?? ""
        case .usage, .persistentUsage, .pendingUsage, .files, .pinnedFiles, .evictedFiles, .evictedBytes, .hits,
             .misses, .originRequests, .fetchedBytes, .fetchErrors, .fetchTTFB, .fetchTTFBTotal, .fetchTTFBCount:
            return String(figure(attribute, pools: record.entryID == WellKnownEntry.root ? nil : [record.entryID]))
        case .purge, .clear, .removePool: return "0"
        }
    }

    /// `user.cache.hit_ratio_curve`: `SIZE=RATIO` pairs from 1/8x to 8x of the pool's limit,
    /// comma-separated (sizes in bytes, or `Nfiles` for a pool limited by max_files only);
    /// empty until the pool has seen enough requests to estimate.
    static func curveValue(_ report: ReplacementReport) -> String {
        report.curve.map { point in
            let size = point.sizeBytes > 0 ? String(point.sizeBytes) : "\(point.sizeFiles)files"
            return "\(size)=\(HitRatioText.format(point.hitRatio))"
        }.joined(separator: ",")
    }

    func lastAccess(of record: EntryRecord) -> Int64 {
        access.pendingTime(record.entryID) ?? record.lastAccess
    }

    func state(of record: EntryRecord, at time: Timestamp) -> FileState {
        if record.parent == nil { return .pending }
        if !countsInUsage(record) { return .origin }
        if record.persistent { return .persistent }
        if PinState(storedValue: record.pinnedUntil).isActive(at: time) { return .pinned }
        return .cached
    }

    /// When age policy removes the file if it is not read again; nil if never. A pin that
    /// ends by itself holds the file until its end; a pin for good, never.
    func expiry(of record: EntryRecord) -> Timestamp? {
        guard record.kind == .file, !record.persistent else { return nil }
        let poolPolicy = policy(of: record)
        let maxAge = record.expiration > 0 ? record.expiration : poolPolicy.maxAgeSeconds
        guard maxAge > 0 else { return nil }
        let basis = poolPolicy.ageBasis == .access ? lastAccess(of: record) : record.mtime
        let byAge = basis + maxAge * 1_000_000_000
        switch PinState(storedValue: record.pinnedUntil) {
        case .unpinned: return Timestamp(nanoseconds: byAge)
        case .forever: return nil
        case .until(let end): return Timestamp(nanoseconds: max(byAge, end.nanoseconds))
        }
    }

    /// The oldest access time among the pool's evictable files. The index holds the times
    /// of the last batch; a file read since has a newer time in memory, so candidates are
    /// taken in the index's order until one has no newer time: no later one can be older.
    func oldestAccess(inPool pool: EntryID) -> Int64? {
        var oldest: Int64?
        var offset = 0
        let batch = 64
        while true {
            // A figure for display: the oldest found so far stands when the index cannot say more.
            guard let candidates = try? index.leastRecentlyUsed(pool: pool, limit: batch, offset: offset) else {
                return oldest
            }
            for candidate in candidates {
                let pending = access.pendingTime(candidate.entryID)
                let time = pending ?? candidate.lastAccess
                oldest = min(oldest ?? time, time)
                if pending == nil { return oldest }
            }
            if candidates.count < batch { return oldest }
            offset += batch
        }
    }

    func policy(of record: EntryRecord) -> PoolPolicy {
        policies.withLock { $0[record.pool] } ?? PoolPolicy()
    }

    /// A figure summed over `pools`, or over every pool when nil; `fetch_ttfb_ms` is the
    /// average time to first byte of their fetches (0 before the first).
    func figure(_ attribute: CacheAttribute, pools: [EntryID]?) -> Int64 {
        if attribute == .fetchTTFB {
            let count = figure(.fetchTTFBCount, pools: pools)
            return count == 0 ? 0 : figure(.fetchTTFBTotal, pools: pools) / count
        }
        let ids = pools ?? Array(policies.withLock { $0.keys })
        let counts = counters.withLock { $0 }
        let time = now.nanoseconds
        return ids.reduce(0) { total, pool in
            let poolUsage = usage.usage(of: pool)
            switch attribute {
            case .usage: return total + poolUsage.cachedBytes
            case .persistentUsage: return total + poolUsage.persistentBytes
            case .pendingUsage: return total + usage.pendingBytes(of: pool)
            case .files: return total + poolUsage.cachedFiles + poolUsage.persistentFiles
            // A figure for display; the evictor reads pins from memory and the index on its own.
            case .pinnedFiles: return total + ((try? index.pinnedCount(pool: pool, now: time)) ?? 0)
            case .evictedFiles: return total + (counts.evictedFiles[pool] ?? 0)
            case .evictedBytes: return total + (counts.evictedBytes[pool] ?? 0)
            case .hits: return total + (counts.hits[pool] ?? 0)
            case .misses: return total + (counts.misses[pool] ?? 0)
            case .originRequests: return total + (counts.originRequests[pool] ?? 0)
            case .fetchedBytes: return total + (counts.fetchedBytes[pool] ?? 0)
            case .fetchErrors: return total + (counts.fetchErrors[pool] ?? 0)
            case .fetchTTFBTotal: return total + (counts.firstByteMicroseconds[pool] ?? 0) / 1000
            case .fetchTTFBCount: return total + (counts.firstBytes[pool] ?? 0)
            default: return total
            }
        }
    }
}
