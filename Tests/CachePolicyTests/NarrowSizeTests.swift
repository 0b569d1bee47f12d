@testable import CachePolicy
import Testing

/// The lists' nodes keep sizes in 28 bits and GDSF's entries in 32; larger sizes are kept
/// beside them (`NarrowSizes`). Every policy must still answer each size exactly.
@Suite struct NarrowSizeTests {
    static let sizes: [Int64] = [0, 1, (1 << 28) - 2, (1 << 28) - 1, 1 << 28, 300 << 20, (1 << 32) - 1, 1 << 32,
                                 5 << 30]

    @Test func theListsKeepTheirNodesIn24Bytes() {
        #expect(MemoryLayout<SegmentedList.StoredNode>.stride == 24)
    }

    /// Each size on either side of the two limits, inserted, resized to every other size
    /// (narrow to wide and back), and removed: sizes and resident bytes exact throughout, and
    /// the table empty again at the end.
    @Test(arguments: [PolicyKind.lru, .s3fifo, .sieve, .tinylfu, .gdsf])
    func everyPolicyKeepsEverySizeExactly(kind: PolicyKind) {
        var policy = AnyReplacementPolicy(kind: kind, goal: .files)
        var expected: [CacheKey: Int64] = [:]
        for (offset, size) in Self.sizes.enumerated() {
            let key = CacheKey(offset + 1)
            policy.insert(key, fingerprint: UInt64(key), size: size, cost: 1)
            expected[key] = size
        }
        for (offset, size) in Self.sizes.reversed().enumerated() {
            let key = CacheKey(offset + 1)
            policy.resize(key, size: size, cost: 1)
            expected[key] = size
        }
        for (key, size) in expected { #expect(policy.size(of: key) == size, "\(kind) key \(key)") }
        #expect(policy.residentBytes == expected.values.reduce(0, +), "\(kind)")
        var evicted: [CacheKey] = []
        while let victim = policy.evict() {
            #expect(policy.contains(victim) == false)
            evicted.append(victim)
        }
        #expect(Set(evicted) == Set(expected.keys), "\(kind)")
        #expect(policy.residentBytes == 0, "\(kind)")
        // Slots are taken again: a narrow size where a wide one was must read as itself.
        for offset in Self.sizes.indices {
            let key = CacheKey(100 + offset)
            policy.insert(key, fingerprint: UInt64(key), size: Int64(offset), cost: 1)
            #expect(policy.size(of: key) == Int64(offset), "\(kind) key \(key)")
        }
    }
}
