/// One pool's figures, as the daemon knows them or as the CLI reads them from the pool's
/// `user.cache.*` attributes.
public struct PoolFigures: Sendable, Equatable {
    public var pool: String
    public var usageBytes: Int64
    public var limitBytes: Int64
    public var persistentBytes: Int64
    public var pendingBytes: Int64
    public var files: Int64
    public var evictedFiles: Int64
    public var evictedBytes: Int64
    public var hits: Int64
    public var misses: Int64
    /// Read-through pools: fetches started, bytes stored from the origin, failed fetches.
    public var originRequests: Int64
    public var fetchedBytes: Int64
    public var fetchErrors: Int64
    /// Times to first byte of the pool's fetches: their sum in milliseconds, and how many.
    public var fetchTTFBMillisecondsTotal: Int64
    public var fetchTTFBCount: Int64
    /// Read-through pools: fetched files whose origin was asked whether they changed, and
    /// opens served a stale copy because it could not be asked.
    public var revalidations: Int64 = 0
    public var staleServed: Int64 = 0
    /// Read-through pools: files fetched for their readers and not kept (`admit_*`).
    public var notAdmitted: Int64 = 0
    /// `hits / (hits + misses)` over the pool's recent requests (nil before any since the
    /// mount; `CounterBook` defines both), and the estimated hit ratio at other sizes
    /// (`user.cache.hit_ratio_curve`), size in bytes or files.
    public var recentHitRatio: Double?
    /// The same requests weighed by their bytes (`user.cache.byte_hit_ratio`).
    public var recentByteHitRatio: Double?
    public var estimatedHitRatios: [EstimatedHitRatio] = []
    /// The bytes the pool's in-memory policy holds (`user.cache.policy_memory_bytes`; 0 for
    /// `lru`, whose order is the index's) and its miniature simulations
    /// (`user.cache.simulation_memory_bytes`).
    public var policyMemoryBytes: Int64 = 0
    public var simulationMemoryBytes: Int64 = 0
    /// The pool's shared tier since the mount (`user.cache.shared_*`; 0 for a pool without one).
    public var shared = SharedTierFigures()

    /// A pool's shared tier figures: lookups answered from it or not, bytes each way, failures,
    /// files the full queue dropped, and the files queued or being written now.
    public struct SharedTierFigures: Sendable, Equatable {
        public var hits: Int64 = 0
        public var misses: Int64 = 0
        public var bytesRead: Int64 = 0
        public var bytesWritten: Int64 = 0
        public var errors: Int64 = 0
        public var dropped: Int64 = 0
        public var queue: Int64 = 0

        public init(hits: Int64 = 0, misses: Int64 = 0, bytesRead: Int64 = 0, bytesWritten: Int64 = 0,
                    errors: Int64 = 0, dropped: Int64 = 0, queue: Int64 = 0) {
            self.hits = hits
            self.misses = misses
            self.bytesRead = bytesRead
            self.bytesWritten = bytesWritten
            self.errors = errors
            self.dropped = dropped
            self.queue = queue
        }
    }

    public struct EstimatedHitRatio: Sendable, Equatable, Codable {
        public var size: Int64
        /// Whether `size` counts bytes (max_size) or files (max_files).
        public var inFiles: Bool
        public var hitRatio: Double

        public init(size: Int64, inFiles: Bool, hitRatio: Double) {
            self.size = size
            self.inFiles = inFiles
            self.hitRatio = hitRatio
        }

        /// Parses `user.cache.hit_ratio_curve` (`SIZE=RATIO,…`, `Nfiles=RATIO` for files).
        public static func parseCurve(_ text: String) -> [EstimatedHitRatio] {
            text.split(separator: ",").compactMap { pair in
                let parts = pair.split(separator: "=")
                guard parts.count == 2, let ratio = Double(parts[1]) else { return nil }
                let inFiles = parts[0].hasSuffix("files")
                guard let size = Int64(inFiles ? parts[0].dropLast(5) : parts[0]) else { return nil }
                return EstimatedHitRatio(size: size, inFiles: inFiles, hitRatio: ratio)
            }
        }
    }

    public init(pool: String, usageBytes: Int64, limitBytes: Int64, persistentBytes: Int64, pendingBytes: Int64,
                files: Int64, evictedFiles: Int64, evictedBytes: Int64, hits: Int64, misses: Int64,
                originRequests: Int64 = 0, fetchedBytes: Int64 = 0, fetchErrors: Int64 = 0,
                fetchTTFBMillisecondsTotal: Int64 = 0, fetchTTFBCount: Int64 = 0) {
        self.fetchTTFBMillisecondsTotal = fetchTTFBMillisecondsTotal
        self.fetchTTFBCount = fetchTTFBCount
        self.originRequests = originRequests
        self.fetchedBytes = fetchedBytes
        self.fetchErrors = fetchErrors
        self.pool = pool
        self.usageBytes = usageBytes
        self.limitBytes = limitBytes
        self.persistentBytes = persistentBytes
        self.pendingBytes = pendingBytes
        self.files = files
        self.evictedFiles = evictedFiles
        self.evictedBytes = evictedBytes
        self.hits = hits
        self.misses = misses
    }
}
