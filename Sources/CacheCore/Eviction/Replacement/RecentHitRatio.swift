/// The hit ratio of a pool's recent requests, not only since the mount: hits and requests
/// decay by half every `halfLife` requests, so the figure follows a change of workload
/// within a few thousand requests.
struct RecentHitRatio: Sendable {
    /// About the requests a pool of a few thousand files sees while its contents turn over.
    static let halfLife = 4_096.0

    private(set) var hits = 0.0
    private(set) var requests = 0.0

    mutating func record(hit: Bool) {
        let keep = 1 - 1 / Self.halfLife * 0.6931
        hits = hits * keep + (hit ? 1 : 0)
        requests = requests * keep + 1
    }

    /// Nil before the first request.
    var ratio: Double? { requests > 0 ? hits / requests : nil }
}
