/// The `user.cache.*` attributes, and where each one may be read or written.
public enum CacheAttribute: String, CaseIterable, Sendable {
    // Files and directories inside a pool.
    case persistent, pinned, expiration
    // Directories inside a pool: everything beneath is one eviction unit; its figures.
    case unit, unitFiles = "unit_files", unitUsage = "unit_usage"
    case lastAccess = "last_access", state, expiresAt = "expires_at", fetching
    // Files fetched from an http(s) origin: the version they hold.
    case etag, lastModified = "last_modified"
    // Files: what a miss of the file costs (its writer's word, or its last fetch's time).
    case cost
    // Pool directories.
    case maxSize = "max_size", maxAge = "max_age", ageBasis = "age_basis", maxFiles = "max_files"
    case lowWatermark = "low_watermark", origin, negativeTTL = "negative_ttl", maxFetches = "max_fetches"
    case revalidate, staleIfError = "stale_if_error"
    case admitMaxSize = "admit_max_size", admitMinSize = "admit_min_size", admitAfter = "admit_after"
    case admitWindow = "admit_window", blockSize = "block_size", cacheControl = "cache_control"
    case eviction, trace, minSize = "min_size", goal
    // Pool directories: the shared tier (docs/shared-tier.md) and its figures (read-only).
    case shared, sharedMaxFileSize = "shared_max_file_size"
    case sharedHits = "shared_hits", sharedMisses = "shared_misses", sharedBytesRead = "shared_bytes_read"
    case sharedBytesWritten = "shared_bytes_written", sharedErrors = "shared_errors", sharedQueue = "shared_queue"
    case sharedDropped = "shared_dropped"
    // Read-only on pool directories: the policy `auto` runs now, the pool's hit ratio over
    // its recent requests (by requests and by bytes), and the estimated hit ratio at other sizes.
    case evictionActive = "eviction_active", hitRatio = "hit_ratio", hitRatioCurve = "hit_ratio_curve"
    case byteHitRatio = "byte_hit_ratio"
    // Read-only on pool directories: the bytes the running replacement policy holds in memory
    // (0 for `lru`, whose order is the index's), and the bytes the pool's miniature
    // simulations hold (`auto`'s choice, the what-if curve).
    case policyMemoryBytes = "policy_memory_bytes", simulationMemoryBytes = "simulation_memory_bytes"
    // Read-only on pool directories: the next victims (see `PreviewRequest`).
    case preview
    // Figures on pool directories and on the root.
    case usage, persistentUsage = "persistent_usage", pendingUsage = "pending_usage", files
    case evictedFiles = "evicted_files", evictedBytes = "evicted_bytes", hits, misses
    case pinnedFiles = "pinned_files", oldestAccess = "oldest_access"
    case originRequests = "origin_requests", fetchedBytes = "fetched_bytes", fetchErrors = "fetch_errors"
    case revalidations, staleServed = "stale_served", notAdmitted = "not_admitted"
    case fetchTTFB = "fetch_ttfb_ms", fetchTTFBTotal = "fetch_ttfb_ms_total", fetchTTFBCount = "fetch_ttfb_count"
    // The root only.
    case minFree = "min_free", store
    /// What a user must act on (one line each; empty when all is well).
    case warnings
    /// Entries the daemon holds in memory now, and how many it keeps before idle directories
    /// leave (`-o memory_budget`, counted in entries with short names); the bytes the budget
    /// counts for them (long names and extras included), and the budget.
    case loadedEntries = "loaded_entries", loadedEntriesBudget = "loaded_entries_budget"
    case loadedBytes = "loaded_bytes", loadedBytesBudget = "loaded_bytes_budget"
    // Actions on pool directories and the root.
    case purge, clear
    // An action on the root only: its value names the empty pool to remove.
    case removePool = "remove_pool"

    public static let prefix = "user.cache."

    public var fullName: String { Self.prefix + rawValue }

    /// Where an attribute lives.
    public enum Place: Sendable {
        case root, pool, directory, file
        /// A symlink or special file: no bytes, so nothing to cache, pin or persist.
        case nameOnly
    }

    /// Attributes that exist at a place, in the order `getfattr -d` lists them.
    public static func readable(at place: Place) -> [CacheAttribute] {
        switch place {
        case .file:
            return [.persistent, .pinned, .expiration, .cost, .lastAccess, .state, .expiresAt, .fetching, .etag,
                    .lastModified]
        case .directory: return [.persistent, .pinned, .expiration, .unit, .unitFiles, .unitUsage]
        case .pool:
            return [.maxSize, .minSize, .maxAge, .ageBasis, .maxFiles, .lowWatermark, .origin, .negativeTTL,
                    .maxFetches, .revalidate, .staleIfError, .admitMaxSize, .admitMinSize, .admitAfter, .admitWindow,
                    .blockSize, .cacheControl, .shared, .sharedMaxFileSize, .eviction, .evictionActive, .goal, .trace]
                + figures + sharedTierFigures + [.oldestAccess, .hitRatio, .byteHitRatio, .hitRatioCurve, .policyMemoryBytes,
                             .simulationMemoryBytes, .preview]
        case .root: return figures + [.minFree, .store, .warnings, .loadedEntries, .loadedEntriesBudget, .loadedBytes,
                                      .loadedBytesBudget]
        case .nameOnly: return []
        }
    }

    public static func writable(at place: Place) -> Set<CacheAttribute> {
        switch place {
        case .file: return [.persistent, .pinned, .expiration, .cost]
        case .directory: return [.persistent, .pinned, .expiration, .unit]
        case .pool:
            return [.maxSize, .minSize, .maxAge, .ageBasis, .maxFiles, .lowWatermark, .origin, .negativeTTL,
                    .maxFetches, .revalidate, .staleIfError, .admitMaxSize, .admitMinSize, .admitAfter, .admitWindow,
                    .blockSize, .cacheControl, .shared, .sharedMaxFileSize, .eviction, .goal, .trace, .purge, .clear]
        case .root: return [.minFree, .purge, .clear, .removePool]
        case .nameOnly: return []
        }
    }

    /// A pool's shared tier figures, counted since the mount (the root has none).
    package static let sharedTierFigures: [CacheAttribute] = [
        .sharedHits, .sharedMisses, .sharedBytesRead, .sharedBytesWritten, .sharedErrors, .sharedDropped, .sharedQueue,
    ]

    package static let figures: [CacheAttribute] = [
        .usage, .persistentUsage, .pendingUsage, .files, .pinnedFiles, .evictedFiles, .evictedBytes, .hits, .misses,
        .originRequests, .fetchedBytes, .fetchErrors, .fetchTTFB, .fetchTTFBTotal, .fetchTTFBCount,
        .revalidations, .staleServed, .notAdmitted,
    ]
}
