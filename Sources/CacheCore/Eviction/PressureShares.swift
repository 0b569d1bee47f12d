import CacheModel

/// How much each pool gives to a disk-pressure pass, so a pool that matters keeps its floor
/// (`user.cache.min_size`). Pools above their floor give first, in proportion to how far each
/// is above it, never more than that; only when every pool is at or below its floor do pools
/// give from below it, in proportion to what each holds. A pass that needs more than the pools
/// hold above their floors takes all of that first, and the floors in its next round.
struct PressureShares: Equatable {
    struct Pool: Sendable {
        var id: EntryID
        /// Cached bytes the pool holds (what its floor and `max_size` are compared with).
        var usage: Int64
        var floor: Int64
    }

    /// Bytes each pool gives; pools that give nothing are left out.
    var bytes: [EntryID: Int64]
    /// What each giving pool's share was proportional to: bytes above its floor, or, when
    /// `belowFloors`, all it holds.
    var basis: [EntryID: Int64]
    /// Every pool was at or below its floor: these bytes come from below the floors.
    var belowFloors: Bool

    init(needed: Int64, pools: [Pool]) {
        let above = pools.map { (id: $0.id, weight: max(0, $0.usage - max(0, $0.floor))) }
        let weighted = above.contains { $0.weight > 0 } ? above : pools.map { (id: $0.id, weight: max(0, $0.usage)) }
        belowFloors = !above.contains { $0.weight > 0 }
        let giving = weighted.filter { $0.weight > 0 }
        basis = Dictionary(uniqueKeysWithValues: giving.map { ($0.id, $0.weight) })
        bytes = Self.apportion(max(0, needed), among: giving)
    }

    /// Splits `target` (at most the weights' sum) in proportion to the weights, in whole bytes
    /// that add up to it exactly: each gets the floor of its exact share, and the bytes left go
    /// one each to the largest remainders (ties to the pool listed first).
    private static func apportion(_ needed: Int64, among giving: [(id: EntryID, weight: Int64)]) -> [EntryID: Int64] {
        let total = giving.reduce(Int64(0)) { $0 + $1.weight }
        guard total > 0, needed > 0 else { return [:] }
        let target = min(needed, total)
        var shares: [(id: EntryID, bytes: Int64, remainder: Int64)] = giving.map { pool in
            // target × weight can pass Int64 for large disks: the product is taken full width.
            let product = target.multipliedFullWidth(by: pool.weight)
            let (quotient, remainder) = total.dividingFullWidth((product.high, product.low))
            return (pool.id, quotient, remainder)
        }
        var left = target - shares.reduce(Int64(0)) { $0 + $1.bytes }
        let byRemainder = shares.indices.sorted { (shares[$0].remainder, $1) > (shares[$1].remainder, $0) }
        for index in byRemainder where left > 0 {
            shares[index].bytes += 1
            left -= 1
        }
        return Dictionary(uniqueKeysWithValues: shares.filter { $0.bytes > 0 }.map { ($0.id, $0.bytes) })
    }
}
