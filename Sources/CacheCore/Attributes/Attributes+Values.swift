import CacheModel
import Foundation
import Glibc

/// What the read-only and readable `user.cache.*` attributes show: states, expiry, figures.
extension Attributes {
    func place(of record: EntryRecord) -> CacheAttribute.Place {
        if record.entryID == WellKnownEntry.root { return .root }
        if record.isPool { return .pool }
        if record.kind.isMetadataOnly { return .nameOnly }
        return record.kind == .directory ? .directory : .file
    }

    /// Throws what the index answered where the value comes from it (getxattr then answers
    /// EIO), rather than showing a zero or an empty value that would look true.
    func cacheAttributeValue(_ attribute: CacheAttribute, of record: EntryRecord) throws -> String {
        let time = names.now
        switch attribute {
        case .persistent: return record.persistent ? "1" : "0"
        case .pinned:
            switch PinState(storedValue: record.pinnedUntil) {
            case .unpinned: return "0"
            case .forever: return "1"
            case .until(let end): return end > time ? ValueParsing.formatRFC3339(end) : "0"
            }
        case .expiration: return String(record.expiration)
        case .cost: return String(record.costMilliseconds)
        case .lastAccess: return ValueParsing.formatRFC3339(Timestamp(nanoseconds: names.lastAccess(of: record)))
        case .state: return state(of: record, at: time).rawValue
        case .expiresAt: return names.expiry(of: record).map(ValueParsing.formatRFC3339) ?? ""
        case .maxSize: return String(names.settings(of: record).maxSize)
        case .minSize: return String(names.settings(of: record).minSize)
        case .maxAge: return String(names.settings(of: record).maxAgeSeconds)
        case .ageBasis: return names.settings(of: record).ageBasis.rawValue
        case .maxFiles: return String(names.settings(of: record).maxFiles)
        case .lowWatermark: return String(names.settings(of: record).lowWatermarkPercent)
        case .origin: return names.settings(of: record).origin
        case .negativeTTL: return String(names.settings(of: record).negativeTTLSeconds)
        case .revalidate:
            let seconds = names.settings(of: record).revalidateSeconds
            return seconds == PoolSettings.neverRevalidate ? "never" : String(seconds)
        case .staleIfError: return String(names.settings(of: record).staleIfErrorSeconds)
        case .admitMaxSize: return String(names.settings(of: record).admitMaxSize)
        case .admitMinSize: return String(names.settings(of: record).admitMinSize)
        case .blockSize: return String(names.settings(of: record).blockSize)
        case .admitAfter: return String(names.settings(of: record).admitAfter)
        case .admitWindow: return String(names.settings(of: record).admitWindowSeconds)
        case .maxFetches: return String(names.settings(of: record).maxFetches)
        case .eviction: return names.settings(of: record).eviction.rawValue
        case .goal: return names.settings(of: record).goal.rawValue
        case .trace: return names.settings(of: record).recordsTrace ? "1" : "0"
        case .cacheControl: return names.settings(of: record).cacheControl ? "1" : "0"
        case .shared: return names.settings(of: record).shared
        case .sharedMaxFileSize: return String(names.settings(of: record).sharedMaxFileSize)
        case .sharedHits, .sharedMisses, .sharedBytesRead, .sharedBytesWritten, .sharedErrors, .sharedDropped,
             .sharedQueue:
            return String(readThrough.sharedTier.figure(attribute, ofPool: record.entryID))
        case .evictionActive: return (evictor.replacement.report(of: record.entryID)?.active ?? .lru).rawValue
        case .hitRatio: return counters.recentHitRatio(of: record.entryID).map(HitRatioText.format) ?? ""
        case .byteHitRatio: return counters.recentByteHitRatio(of: record.entryID).map(HitRatioText.format) ?? ""
        case .hitRatioCurve: return evictor.replacement.report(of: record.entryID).map(Self.curveValue) ?? ""
        case .policyMemoryBytes: return String(evictor.replacement.report(of: record.entryID)?.policyMemoryBytes ?? 0)
        case .simulationMemoryBytes:
            return String(evictor.replacement.report(of: record.entryID)?.simulationMemoryBytes ?? 0)
        case .fetching: return readThrough.fetchingValue(of: record.entryID)
        case .etag, .lastModified:
            // Empty for a file the origin gave no version for.
            return try index.xattr(record.entryID, name: Data(attribute.fullName.utf8))
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
        case .minFree:
            // The value pressure passes use: the default for a stored value that does not parse.
            // An index that cannot be read stops those passes, and shows nothing here.
            do {
                return try eviction.minFree().description
            } catch {
                logger.error("could not read min_free from the index: \(error)")
                return ""
            }
        case .store: return layout.root
        case .warnings: return warnings.all.joined(separator: "\n")
        case .loadedEntries: return String(names.loadedEntries)
        case .loadedEntriesBudget: return String(names.memoryBudget.entries)
        case .loadedBytes: return String(names.loadedBytes)
        case .loadedBytesBudget: return String(names.memoryBudget.bytes)
        case .oldestAccess:
            return oldestAccess(inPool: record.entryID).map { ValueParsing.formatRFC3339(Timestamp(nanoseconds: $0)) } ?? ""
        case .pinnedFiles:
            // Pins that end by themselves are counted by the index, at this moment.
            let pools = record.entryID == WellKnownEntry.root ? names.poolIDs() : [record.entryID]
            let time = names.now.nanoseconds
            return String(try pools.reduce(0) { total, pool in try total + index.pinnedCount(pool: pool, now: time) })
        case .usage, .persistentUsage, .pendingUsage, .files, .evictedFiles, .evictedBytes, .hits,
             .misses, .originRequests, .fetchedBytes, .fetchErrors, .fetchTTFB, .fetchTTFBTotal, .fetchTTFBCount,
             .revalidations, .staleServed, .notAdmitted:
            return String(figure(attribute, pools: record.entryID == WellKnownEntry.root ? nil : [record.entryID]))
        case .purge, .clear, .removePool: return "0"
        case .unit, .unitFiles, .unitUsage:
            // A figure for display: a directory the index cannot read shows 0 and logs why.
            do {
                return try unitValue(attribute, of: record)
            } catch {
                logger.error("could not read unit \(record.entryID)'s figures: \(error)")
                return "0"
            }
        case .preview:
            return String(decoding: try previewValue(of: record, query: ""), as: UTF8.self)
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

    func state(of record: EntryRecord, at time: Timestamp) -> FileState {
        if record.parent == nil { return .pending }
        if !names.countsInUsage(record) { return .origin }
        if record.persistent { return .persistent }
        if PinState(storedValue: record.pinnedUntil).isActive(at: time) { return .pinned }
        return .cached
    }

    /// The oldest access time among the pool's evictable files. The index holds the times
    /// of the last batch; a file read since has a newer time in memory, so candidates are
    /// taken in the index's order until one has no newer time: no later one can be older.
    /// The times in memory are taken before the rows: a fold lets go of a time only after
    /// its row is committed, so a time missing from them is in every row read after. (Taken
    /// after a row, a time could be let go in between, leaving the row's older one.)
    func oldestAccess(inPool pool: EntryID) -> Int64? {
        let pendingTimes = names.pendingAccessTimes()
        var oldest: Int64?
        do {
            try index.forEachLeastRecentlyUsed(pool: pool, batch: Tunables.oldestAccessBatch) { candidates in
                for candidate in candidates {
                    let pending = pendingTimes[candidate.entryID]
                    let time = pending ?? candidate.lastAccess
                    oldest = min(oldest ?? time, time)
                    if pending == nil { return false }
                }
                return true
            }
        } catch {
            // A figure for display: the oldest found so far stands, and the log says why.
            logger.error("could not read pool \(pool)'s oldest access from the index: \(error)")
        }
        return oldest
    }

    /// A figure summed over `pools`, or over every pool when nil; `fetch_ttfb_ms` is the
    /// average time to first byte of their fetches (0 before the first).
    func figure(_ attribute: CacheAttribute, pools: [EntryID]?) -> Int64 {
        if attribute == .fetchTTFB {
            let count = figure(.fetchTTFBCount, pools: pools)
            return count == 0 ? 0 : figure(.fetchTTFBTotal, pools: pools) / count
        }
        let ids = pools ?? names.poolIDs()
        let counts = counters.snapshot
        return ids.reduce(0) { total, pool in
            let poolUsage = names.usage(of: pool)
            switch attribute {
            case .usage: return total + poolUsage.cachedBytes
            case .persistentUsage: return total + poolUsage.persistentBytes
            case .pendingUsage: return total + names.pendingBytes(of: pool)
            case .files: return total + poolUsage.cachedFiles + poolUsage.persistentFiles
            case .evictedFiles: return total + (counts.evictedFiles[pool] ?? 0)
            case .evictedBytes: return total + (counts.evictedBytes[pool] ?? 0)
            case .hits: return total + (counts.hits[pool] ?? 0)
            case .misses: return total + (counts.misses[pool] ?? 0)
            case .originRequests: return total + (counts.originRequests[pool] ?? 0)
            case .fetchedBytes: return total + (counts.fetchedBytes[pool] ?? 0)
            case .fetchErrors: return total + (counts.fetchErrors[pool] ?? 0)
            case .fetchTTFBTotal: return total + (counts.firstByteMicroseconds[pool] ?? 0) / 1000
            case .fetchTTFBCount: return total + (counts.firstBytes[pool] ?? 0)
            case .revalidations: return total + (counts.revalidations[pool] ?? 0)
            case .staleServed: return total + (counts.staleServed[pool] ?? 0)
            case .notAdmitted: return total + (counts.notAdmitted[pool] ?? 0)
            default: return total
            }
        }
    }

    /// Every pool's figures, in name order.
    func poolFigures() -> [PoolFigures] {
        let limits = names.allPoolSettings().mapValues(\.maxSize)
        return names.poolNames().map { id, name in
            let pools = [id]
            var figures = PoolFigures(
                pool: name, usageBytes: figure(.usage, pools: pools), limitBytes: limits[id] ?? 0,
                persistentBytes: figure(.persistentUsage, pools: pools), pendingBytes: figure(.pendingUsage, pools: pools),
                files: figure(.files, pools: pools), evictedFiles: figure(.evictedFiles, pools: pools),
                evictedBytes: figure(.evictedBytes, pools: pools), hits: figure(.hits, pools: pools),
                misses: figure(.misses, pools: pools), originRequests: figure(.originRequests, pools: pools),
                fetchedBytes: figure(.fetchedBytes, pools: pools), fetchErrors: figure(.fetchErrors, pools: pools),
                fetchTTFBMillisecondsTotal: figure(.fetchTTFBTotal, pools: pools),
                fetchTTFBCount: figure(.fetchTTFBCount, pools: pools))
            figures.revalidations = figure(.revalidations, pools: pools)
            figures.staleServed = figure(.staleServed, pools: pools)
            figures.notAdmitted = figure(.notAdmitted, pools: pools)
            figures.shared = readThrough.sharedTier.figures(ofPool: id)
            figures.recentHitRatio = counters.recentHitRatio(of: id)
            figures.recentByteHitRatio = counters.recentByteHitRatio(of: id)
            if let report = evictor.replacement.report(of: id) {
                figures.estimatedHitRatios = report.curve.map {
                    PoolFigures.EstimatedHitRatio(size: $0.sizeBytes > 0 ? $0.sizeBytes : $0.sizeFiles,
                                                  inFiles: $0.sizeBytes == 0, hitRatio: $0.hitRatio)
                }
                figures.policyMemoryBytes = Int64(report.policyMemoryBytes)
                figures.simulationMemoryBytes = Int64(report.simulationMemoryBytes)
            }
            return figures
        }.sorted { $0.pool < $1.pool }
    }

    /// `df` inside a pool describes the pool: its budget as the size, what is left of it as
    /// available. The root, and a pool without a byte limit, describe the store's filesystem.
    /// The corresponding FUSE operation is `STATFS`, for the entry `id` the path names.
    func statfs(of id: EntryID) throws -> FilesystemStats {
        let disk = try files.bytes.filesystemStats()
        let pool = try names.record(id).pool
        guard pool != 0, let settings = names.settings(ofPool: pool), settings.maxSize > 0 else { return disk }
        let unit = max(disk.fragmentSize, 1)
        let used = names.usage(of: pool)
        // A pool cannot hold more than its filesystem has free, whatever its budget says.
        let leftUnderLimit = UInt64(max(settings.maxSize - used.cachedBytes, 0)) / unit
        var stats = disk
        stats.blocks = UInt64(settings.maxSize) / unit
        stats.freeBlocks = min(leftUnderLimit, disk.freeBlocks)
        stats.availableBlocks = min(leftUnderLimit, disk.availableBlocks)
        if settings.maxFiles > 0 {
            let files = UInt64(max(used.cachedFiles, 0))
            stats.files = UInt64(settings.maxFiles)
            stats.freeFiles = min(UInt64(settings.maxFiles) - min(files, UInt64(settings.maxFiles)), disk.freeFiles)
        }
        return stats
    }
}
