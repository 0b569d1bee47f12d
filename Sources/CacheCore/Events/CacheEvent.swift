import Foundation

/// Why cachefs removed a file, or what happened to a pool.
public enum CacheEventKind: String, Sendable, Codable {
    /// Removed to bring a pool within max_size or max_files.
    case evicted
    /// Removed because it was older than its max age.
    case expired
    /// Removed because the store's filesystem had less than min_free free.
    case pressure
    /// Removed by `user.cache.clear`.
    case cleared
    /// Removed by a user (`rm`).
    case deleted
    /// A cached file that alone exceeded its pool's max_size was refused and removed.
    case refused
    /// A file being fetched from the pool's origin failed (after retries) and was dropped.
    case fetchFailed = "fetch_failed"
    /// A pool went over one of its limits.
    case overLimit = "over_limit"
}

/// One line of `STORE/events.jsonl`.
public struct CacheEvent: Sendable, Codable, Equatable {
    public var time: String
    public var event: CacheEventKind
    public var pool: String
    public var path: String
    public var size: Int64
    public var reason: String

    public init(time: Timestamp, event: CacheEventKind, pool: String, path: String, size: Int64, reason: String) {
        self.time = ValueParsing.formatRFC3339(time)
        self.event = event
        self.pool = pool
        self.path = path
        self.size = size
        self.reason = reason
    }
}
