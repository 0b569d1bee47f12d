/// An upper bound on the hit ratio any cache of a given capacity can reach on a trace, when
/// Belady's MIN is no longer exact (sizes that differ, or costs): no cache of that size beats it.
///
/// It relaxes "at most C bytes resident at every moment" to "at most C × T byte-requests in
/// total" over the trace's T requests (MODELS.md 9.2; Berger, Beckmann and Harchol-Balter's
/// PFOO-L, SIGMETRICS '18). A hit needs its object kept from the request before (a read or a
/// write of it) to this one: a reuse interval, which takes size × length of the budget. The
/// best use of the budget is a fractional knapsack: take intervals by value per byte-request,
/// highest first, the last one in part.
/// - files: each interval is worth one hit; taken by size × length, smallest first.
/// - bytes: each is worth its size; taken by length, shortest first.
/// - cost: each is worth its cost; taken by cost / (size × length), highest first.
///
/// Each measure is bounded on its own (three knapsacks), so every ratio of the result is a
/// bound for that measure. It is not tight: with equal sizes it can lie well above Belady's
/// optimum (on a b c a b c a with room for two, 4 hits of 7 against Belady's 3).
public struct OptimumBound: Sendable, Equatable {
    public var objectHitRatio: Double
    public var byteHitRatio: Double
    public var costSavedRatio: Double

    public func ratio(for goal: CacheGoal) -> Double {
        switch goal {
        case .files: return objectHitRatio
        case .bytes: return byteHitRatio
        case .cost: return costSavedRatio
        }
    }

    struct Interval {
        /// size × length: what holding the object for the interval takes of the budget.
        var spaceTime: Double
        var size: Int64
        var cost: Double
    }

    /// `capacity` in bytes, or objects with `countsObjects`. Reads before `warmup` are not
    /// counted (as a replay's figures do); the whole trace's budget stays, so it is still a
    /// bound.
    public static func run(_ trace: [TraceRequest], capacity: Int64, countsObjects: Bool = false,
                           warmup: Int = 0) -> OptimumBound {
        var lastSeen: [CacheKey: Int] = [:]
        var intervals: [Interval] = []
        var requests = 0.0
        var requestedBytes = 0.0
        var requestedCost = 0.0
        for (index, request) in trace.enumerated() {
            let occupancy = countsObjects ? 1 : request.size
            switch request.operation {
            case .delete:
                lastSeen[request.key] = nil
            case .set:
                lastSeen[request.key] = index
            case .get:
                if index >= warmup {
                    requests += 1
                    requestedBytes += Double(request.size)
                    requestedCost += request.cost
                    if let previous = lastSeen[request.key], occupancy <= capacity {
                        intervals.append(Interval(spaceTime: Double(occupancy) * Double(index - previous),
                                                  size: request.size, cost: request.cost))
                    }
                }
                lastSeen[request.key] = index
            }
        }
        let budget = Double(capacity) * Double(trace.count)
        let hits = knapsack(intervals, budget: budget, value: { _ in 1 })
        let hitBytes = knapsack(intervals, budget: budget, value: { Double($0.size) })
        let hitCost = knapsack(intervals, budget: budget, value: { $0.cost })
        return OptimumBound(objectHitRatio: requests > 0 ? min(1, hits / requests) : 0,
                            byteHitRatio: requestedBytes > 0 ? min(1, hitBytes / requestedBytes) : 0,
                            costSavedRatio: requestedCost > 0 ? min(1, hitCost / requestedCost) : 0)
    }

    /// The most value intervals of the given space-time can hold in `budget`, the last one
    /// taken in part.
    static func knapsack(_ intervals: [Interval], budget: Double, value: (Interval) -> Double) -> Double {
        let ranked = intervals.map { (value: value($0), spaceTime: $0.spaceTime) }
            .filter { $0.value > 0 }
            .sorted { $0.value * $1.spaceTime > $1.value * $0.spaceTime }
        var left = budget
        var total = 0.0
        for interval in ranked {
            if interval.spaceTime <= left {
                left -= interval.spaceTime
                total += interval.value
            } else {
                total += interval.value * left / interval.spaceTime
                break
            }
        }
        return total
    }
}
