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
        case .minFree: return (try? index.setting(MinFree.settingKey)) ?? MinFree.defaultValue.description
        case .store: return layout.root
        case .oldestAccess:
            let oldest = try? index.leastRecentlyUsed(pool: record.entryID, limit: 1).first
            return oldest.map { ValueParsing.formatRFC3339(Timestamp(nanoseconds: lastAccess(of: $0))) } ?? ""
        case .usage, .persistentUsage, .pendingUsage, .files, .pinnedFiles, .evictedFiles, .evictedBytes, .hits,
             .misses:
            return String(figure(attribute, pools: record.entryID == WellKnownEntry.root ? nil : [record.entryID]))
        case .purge, .clear, .removePool: return "0"
        }
    }

    func lastAccess(of record: EntryRecord) -> Int64 {
        access.pendingTime(record.entryID) ?? record.lastAccess
    }

    func state(of record: EntryRecord, at time: Timestamp) -> FileState {
        if record.parent == nil { return .pending }
        if record.persistent { return .persistent }
        if PinState(storedValue: record.pinnedUntil).isActive(at: time) { return .pinned }
        return .cached
    }

    /// When age policy removes the file if it is not read again; nil if never.
    func expiry(of record: EntryRecord) -> Timestamp? {
        guard record.kind == .file, !record.persistent else { return nil }
        let poolPolicy = policy(of: record)
        let maxAge = record.expiration > 0 ? record.expiration : poolPolicy.maxAgeSeconds
        guard maxAge > 0 else { return nil }
        let basis = poolPolicy.ageBasis == .access ? lastAccess(of: record) : record.mtime
        return Timestamp(nanoseconds: basis + maxAge * 1_000_000_000)
    }

    func policy(of record: EntryRecord) -> PoolPolicy {
        policies.withLock { $0[record.pool] } ?? PoolPolicy()
    }

    /// A figure summed over `pools`, or over every pool when nil.
    func figure(_ attribute: CacheAttribute, pools: [EntryID]?) -> Int64 {
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
            case .pinnedFiles: return total + ((try? index.pinnedCount(pool: pool, now: time)) ?? 0)
            case .evictedFiles: return total + (counts.evictedFiles[pool] ?? 0)
            case .evictedBytes: return total + (counts.evictedBytes[pool] ?? 0)
            case .hits: return total + (counts.hits[pool] ?? 0)
            case .misses: return total + (counts.misses[pool] ?? 0)
            default: return total
            }
        }
    }
}
