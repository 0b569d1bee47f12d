@testable import CachePolicy
import Testing

/// `memoryBytes`: each policy's exact account of its storage, held between what its
/// residents need at the least and what its arrays' growth rules allow, both derived from
/// `MemoryLayout`; and GDSF's cost per resident beside LRU's (issue 29: at most 48 bytes more).
@Suite struct PolicyMemoryTests {
    /// Spare room an allocation may carry past what was asked (malloc rounds up).
    static let allocationSlack = 4_096

    static let indexBucket = MemoryLayout<Int32>.stride

    /// What `count` residents need at the least: the per-resident arrays of the kind, one
    /// element each, and a `SlotIndex` at most three quarters full.
    /// A sketch of `width` columns: `depth` 4-bit counters each, two a byte, and a doorkeeper
    /// bit per counter.
    static func sketchBytes(width: Int) -> Int {
        width * FrequencySketch.depth / 2 + width * FrequencySketch.depth / 8
    }

    static func minimum(_ kind: PolicyKind, count: Int) -> Int {
        let index = count * 4 / 3 * indexBucket
        switch kind {
        case .lru, .sieve, .s3fifo:
            return count * MemoryLayout<SegmentedList.StoredNode>.stride + index
        case .tinylfu:
            // The sketch is at least a column per resident.
            let sketch = sketchBytes(width: count)
            return count * MemoryLayout<SegmentedList.StoredNode>.stride + index + sketch
        case .gdsf, .gdsfFiles:
            return count * (MemoryLayout<GDSFEntry>.stride + MemoryLayout<Int32>.stride) + index
        }
    }

    /// The most its capacities allow for `count` residents: arrays of `elements` elements, an
    /// index of at most one and a half times the buckets `indexed` slots need at three
    /// quarters full (it grows by half), a sketch of less than 8 columns per resident, and
    /// malloc's spare room.
    static func maximum(_ kind: PolicyKind, count: Int, elements: Int, indexed: Int) -> Int {
        let index = max((indexed * 4 / 3 + 1) * 3 / 2, 16) * indexBucket
        switch kind {
        case .lru, .sieve:
            return elements * MemoryLayout<SegmentedList.StoredNode>.stride + index + 2 * allocationSlack
        case .s3fifo:
            // Two lists, each with its node array and index; residents are in one or the other.
            return elements * MemoryLayout<SegmentedList.StoredNode>.stride + 2 * index + 4 * allocationSlack
        case .tinylfu:
            let sketch = sketchBytes(width: 8 * max(count, 64))
            return elements * MemoryLayout<SegmentedList.StoredNode>.stride + index + sketch + 4 * allocationSlack
        case .gdsf, .gdsfFiles:
            return elements * (MemoryLayout<GDSFEntry>.stride + MemoryLayout<Int32>.stride) + index
                + 3 * allocationSlack
        }
    }

    /// Sizes from a few bytes to a few MiB, the same for every kind.
    static func mixedSize(_ generator: inout SeededGenerator) -> Int64 {
        Int64(1) << Int64.random(in: 0...22, using: &generator) + Int64.random(in: 0..<512, using: &generator)
    }

    /// Residents as a pool's build installs them (`ReplacementTable.finishBuild`): the
    /// reservation for their count, then each restored, oldest first.
    static func restored(_ kind: PolicyKind, count: Int, seed: UInt64 = 1) -> AnyReplacementPolicy {
        var policy = AnyReplacementPolicy(kind: kind, goal: .files)
        policy.reserveCapacity(AnyReplacementPolicy.reservation(forResidents: count))
        var generator = SeededGenerator(seed: seed)
        for key in 0..<count {
            let size = mixedSize(&generator)
            policy.restore(CacheKey(key), fingerprint: Fingerprint.mix(UInt64(key)), size: size,
                           cost: 1 / Double(size))
        }
        return policy
    }

    @Test func anEmptyPolicyHoldsNothingButASketch() {
        for kind in PolicyKind.allCases {
            let policy = AnyReplacementPolicy(kind: kind, goal: .files)
            if kind == .tinylfu {
                // Its first 64 columns (a doorkeeper word per row).
                let sketch = Self.sketchBytes(width: 64)
                #expect(policy.memoryBytes >= sketch && policy.memoryBytes <= sketch + 2 * Self.allocationSlack)
            } else {
                #expect(policy.memoryBytes == 0, "\(kind)")
            }
        }
    }

    @Test(arguments: PolicyKind.allCases)
    func insertedResidentsAreCountedWithinTheirStructuresBounds(kind: PolicyKind) {
        let count = 20_000
        var policy = AnyReplacementPolicy(kind: kind, goal: .files)
        var generator = SeededGenerator(seed: 7)
        for key in 0..<count {
            let size = Self.mixedSize(&generator)
            policy.insert(CacheKey(key), fingerprint: Fingerprint.mix(UInt64(key)), size: size, cost: 1)
        }
        #expect(policy.count == count)
        #expect(policy.memoryBytes >= Self.minimum(kind, count: count))
        // Arrays that grew by doubling hold less than twice their elements.
        #expect(policy.memoryBytes <= Self.maximum(kind, count: count, elements: 2 * count, indexed: count))
        // Removals keep what was allocated (and the free list grows): never less than before.
        let before = policy.memoryBytes
        for key in stride(from: 0, to: count, by: 2) { policy.remove(CacheKey(key)) }
        #expect(policy.memoryBytes >= before)
    }

    @Test(arguments: PolicyKind.allCases, [20_000, 100_000])
    func restoredResidentsAreCountedWithinTheReservation(kind: PolicyKind, count: Int) {
        let policy = Self.restored(kind, count: count)
        let room = AnyReplacementPolicy.reservation(forResidents: count)
        #expect(policy.count == count)
        #expect(policy.memoryBytes >= Self.minimum(kind, count: count))
        // The reservation held: the arrays were allocated once, at its size, and never grew.
        #expect(policy.memoryBytes <= Self.maximum(kind, count: count, elements: room, indexed: room))
    }

    /// Issue 29's target on the exact figure: GDSF's bytes per resident at most 48 beyond
    /// LRU's, both built as a pool's build builds them.
    @Test(arguments: [20_000, 100_000])
    func gdsfHoldsAtMost48BytesPerResidentBeyondLRU(count: Int) {
        let gdsf = Self.restored(.gdsf, count: count)
        let lru = Self.restored(.lru, count: count)
        let beyond = Double(gdsf.memoryBytes - lru.memoryBytes) / Double(count)
        #expect(beyond <= 48, "gdsf \(gdsf.memoryBytes) B, lru \(lru.memoryBytes) B for \(count) residents")
        // What sets the difference: the entry and heap slot against the node, on the same
        // reservation and the same index.
        let room = AnyReplacementPolicy.reservation(forResidents: count)
        let perRoom = MemoryLayout<GDSFEntry>.stride + MemoryLayout<Int32>.stride
            - MemoryLayout<SegmentedList.StoredNode>.stride
        #expect(abs(gdsf.memoryBytes - lru.memoryBytes - room * perRoom) <= 3 * Self.allocationSlack)
    }

    /// The ghosts S3-FIFO keeps after evictions count too.
    @Test func s3fifoCountsItsGhosts() {
        var policy = S3FIFOPolicy()
        for key in 0..<1_000 { policy.insert(CacheKey(key), fingerprint: UInt64(key), size: 1, cost: 1) }
        let before = policy.memoryBytes
        for _ in 0..<500 { _ = policy.evict() }
        #expect(policy.count == 500)
        #expect(policy.memoryBytes > before)
    }
}
