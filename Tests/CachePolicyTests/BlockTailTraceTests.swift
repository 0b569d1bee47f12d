@testable import CachePolicy
import Testing

/// `auto` on a block-like trace with a long tail of one-time reads, whose leader changes with
/// the phase (issue 43): `scripts/lib/block_trace.py` makes the bench's trace the same way.
@Suite struct BlockTailTraceTests {
    /// 110,000 requests of unit size: 42 % read a block never read before (a scan); the rest
    /// alternate between phases of 6,000 to 14,000 requests of re-reads of the blocks read
    /// lately (any of the last 3,000 requests') and of reads of a warm set of 6,000 blocks by
    /// Zipf 0.8 popularity.
    static func makeTrace(seed: UInt64) -> [CacheKey] {
        var generator = SeededGenerator(seed: seed)
        let warm = ZipfKeys(objects: 6_000, alpha: 0.8)
        let recentWindow = 3_000
        var recent: [CacheKey] = []
        var keys: [CacheKey] = []
        keys.reserveCapacity(110_000)
        var nextScanned: CacheKey = 1_000_000
        var readsRecent = true
        var leftInPhase = Int.random(in: 6_000...14_000, using: &generator)
        while keys.count < 110_000 {
            if leftInPhase == 0 {
                readsRecent.toggle()
                leftInPhase = Int.random(in: 6_000...14_000, using: &generator)
            }
            leftInPhase -= 1
            let key: CacheKey
            if Double.random(in: 0..<1, using: &generator) < 0.42 {
                key = nextScanned
                nextScanned += 1
            } else if !readsRecent || recent.isEmpty {
                key = CacheKey(warm.next(&generator))
            } else {
                key = recent[recent.count - 1 - Int.random(in: 0..<min(recent.count, recentWindow), using: &generator)]
            }
            keys.append(key)
            recent.append(key)
            if recent.count > 4 * recentWindow { recent.removeFirst(recentWindow) }
        }
        return keys
    }

    /// With the candidates sampled at the curve's rate (its 8x simulation held to 4,096 names,
    /// so about 512 names each at 1x), the miniature caches misjudged the full-size ones: on
    /// the bench's trace at 5 %, the miniature SIEVE led LRU by 0.06 where the full-size SIEVE
    /// trails it by 0.14, and `auto` ended 0.013 under the best fixed policy. Sampled apart
    /// (``PolicyAdvisor/defaultMaxComparedKeys``), these traces end 0.003 to 0.005 under at 5 %
    /// and level at 1 %. At 10 % they end 0.008 to 0.011 under (the bench's trace 0.005): the
    /// lead there passes from S3-FIFO to LRU to SIEVE to GDSF with the phases, and `auto`
    /// follows it (simulated whole, unsampled, 0.0075 under); see docs/eviction-policies.md.
    @Test(arguments: [3, 5, 7] as [UInt64], [1, 5])
    func autoIsWithinAHundredthOfTheBestFixedPolicy(seed: UInt64, percent: Int) {
        let trace = Self.makeTrace(seed: seed)
        let capacity = Int64(Set(trace).count * percent / 100)
        var auto = AutoSimulator(capacity: capacity, countsObjects: true)
        for key in trace { auto.get(key, size: 1) }
        let fixed = [PolicyKind.lru, .s3fifo, .sieve, .tinylfu, .gdsf].map { kind in
            var cache = CacheSimulator(kind: kind, capacity: capacity, countsObjects: true)
            for key in trace { cache.get(key, size: 1) }
            return (kind, cache.figures.objectHitRatio)
        }
        let best = fixed.max { $0.1 < $1.1 }!
        #expect(auto.cache.figures.objectHitRatio >= best.1 - 0.01,
                "auto \(auto.cache.figures.objectHitRatio) (switches \(auto.switches)), best fixed \(best)")
    }
}
