import CacheModel

/// The window of `user.cache.hit_ratio`: the hits and misses ``CounterBook`` counts (the
/// same requests as the totals), each weighted by how recent it is. Weights halve every
/// `Tunables.hitRatioHalfLife` requests, so the figure follows a change of workload within
/// a few thousand requests; since the mount, as it is kept in memory only.
///
/// The byte hit ratio weighs the same requests by their bytes (a hit by its file's size, a
/// miss by its estimate, see `NameCounters`), with the same weights by age.
struct RecentHitRatio: Sendable {
    private(set) var hits = 0.0
    private(set) var requests = 0.0
    private(set) var hitBytes = 0.0
    private(set) var requestBytes = 0.0

    private static let keep = 1 - 1 / Tunables.hitRatioHalfLife * 0.6931

    mutating func record(hit: Bool, bytes: Int64) {
        hits = hits * Self.keep + (hit ? 1 : 0)
        requests = requests * Self.keep + 1
        hitBytes = hitBytes * Self.keep + (hit ? Double(bytes) : 0)
        requestBytes = requestBytes * Self.keep + Double(bytes)
    }

    /// Takes back the newest miss (the kernel's lookup before a create): a whole request, as
    /// the create follows its lookup at once, but never more misses than the window holds.
    mutating func takeBackMiss(bytes: Int64) {
        requests -= min(1, max(requests - hits, 0))
        requestBytes -= min(Double(bytes), max(requestBytes - hitBytes, 0))
    }

    /// Nil before the first request.
    var ratio: Double? { requests > 0 ? hits / requests : nil }

    /// Nil before the first request (or while every request weighed nothing).
    var byteRatio: Double? { requestBytes > 0 ? hitBytes / requestBytes : nil }
}
