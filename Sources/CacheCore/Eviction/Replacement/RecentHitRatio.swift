/// The hit ratio of a pool's recent requests, not only since the mount: hits and requests
/// decay by half every `Tunables.hitRatioHalfLife` requests, so the figure follows a change
/// of workload within a few thousand requests.
struct RecentHitRatio: Sendable {
    private(set) var hits = 0.0
    private(set) var requests = 0.0

    mutating func record(hit: Bool) {
        let keep = 1 - 1 / Tunables.hitRatioHalfLife * 0.6931
        hits = hits * keep + (hit ? 1 : 0)
        requests = requests * keep + 1
    }

    /// Nil before the first request.
    var ratio: Double? { requests > 0 ? hits / requests : nil }
}
