@testable import CachePolicy
import Testing

/// The sketch with two counters a byte against the implementation it replaced, a byte a
/// counter (kept here, as it was, as the reference): random increments of a few hundred
/// fingerprints, past several halvings, must give the same estimate for every fingerprint.
@Suite struct FrequencySketchTests {
    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func packedCountersAgreeWithOneByteCounters(seed: UInt64) {
        var sketch = FrequencySketch(width: 64)
        var reference = ByteCounterSketch(width: 64)
        var generator = SeededGenerator(seed: seed)
        // Skewed, so some counters reach their cap of 15 between halvings.
        let fingerprints = (0..<300).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        for step in 0..<(16 * FrequencySketch.sampleFactor * 3 + 100) {
            let index = min(Int.random(in: 0..<300, using: &generator), Int.random(in: 0..<300, using: &generator))
            sketch.increment(fingerprints[index])
            reference.increment(fingerprints[index])
            if step % 97 == 0 {
                for fingerprint in fingerprints where sketch.estimate(fingerprint) != reference.estimate(fingerprint) {
                    Issue.record("seed \(seed), step \(step): \(sketch.estimate(fingerprint)) against \(reference.estimate(fingerprint))")
                    return
                }
            }
        }
        #expect(fingerprints.contains { reference.estimate($0) >= 8 }, "the counters got high enough to test halving")
        #expect(fingerprints.allSatisfy { sketch.estimate($0) == reference.estimate($0) })
    }

    /// The first request sets the doorkeeper (1), each next one a counter step, up to 15.
    @Test func aFingerprintCountsUpToItsCap() {
        var sketch = FrequencySketch(width: 64)
        for requests in 1...20 {
            sketch.increment(42)
            #expect(sketch.estimate(42) == min(requests, 16), "after \(requests)")
        }
    }

    /// Growing lowers no estimate (each new column starts with the larger counter of the
    /// old columns it covers, and either's doorkeeper bit) and keeps 4.5 to 5.5 columns per
    /// resident; most estimates stay exactly what they were.
    @Test(arguments: 1...4 as ClosedRange<UInt64>)
    func growingLowersNoEstimate(seed: UInt64) {
        var sketch = FrequencySketch(width: 64)
        var generator = SeededGenerator(seed: seed)
        let fingerprints = (0..<500).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        // Fewer than a halving period (16 residents × 25).
        for _ in 0..<(16 * FrequencySketch.sampleFactor - 20) {
            let index = min(Int.random(in: 0..<500, using: &generator), Int.random(in: 0..<500, using: &generator))
            sketch.increment(fingerprints[index])
        }
        let before = fingerprints.map { sketch.estimate($0) }
        #expect(before.contains { $0 >= 8 } && before.contains { $0 <= 1 })
        for residents in [17, 100, 3_000] {
            sketch.ensureWidth(for: residents)
            #expect(Double(sketch.width) >= 4.5 * Double(residents) && Double(sketch.width) < 5.5 * Double(residents) + 64,
                    "\(residents): \(sketch.width)")
            let after = fingerprints.map { sketch.estimate($0) }
            #expect(zip(after, before).allSatisfy { $0 >= $1 }, "after growing for \(residents)")
            #expect(zip(after, before).filter { $0 == $1 }.count >= fingerprints.count * 9 / 10,
                    "after growing for \(residents): \(zip(after, before).filter { $0 != $1 }.count) changed")
        }
    }

    /// `FrequencySketch` before its counters were packed: one byte a counter (halving after
    /// `sampleFactor` increments per resident, a quarter of the width here, as the sketch does).
    struct ByteCounterSketch {
        let width: Int
        var counters: [UInt8]
        var doorkeeper: [UInt64]
        var increments = 0

        init(width: Int) {
            self.width = width
            counters = Array(repeating: 0, count: width * FrequencySketch.depth)
            doorkeeper = Array(repeating: 0, count: width / 64 * FrequencySketch.depth)
        }

        func index(_ fingerprint: UInt64, row: Int) -> Int {
            var hash = fingerprint &+ UInt64(row + 1) &* 0x9e37_79b9_7f4a_7c15
            hash = (hash ^ (hash >> 31)) &* 0xbf58_476d_1ce4_e5b9
            hash ^= hash >> 29
            return row * width + Int(hash.multipliedFullWidth(by: UInt64(width)).high)
        }

        func inDoorkeeper(_ fingerprint: UInt64) -> Bool {
            (0..<FrequencySketch.depth).allSatisfy { row in
                let bit = index(fingerprint, row: row)
                return doorkeeper[bit >> 6] & (1 << UInt64(bit & 63)) != 0
            }
        }

        mutating func increment(_ fingerprint: UInt64) {
            increments += 1
            if increments >= width / 4 * FrequencySketch.sampleFactor {
                increments = 0
                for slot in counters.indices { counters[slot] >>= 1 }
                for word in doorkeeper.indices { doorkeeper[word] = 0 }
            }
            guard inDoorkeeper(fingerprint) else {
                for row in 0..<FrequencySketch.depth {
                    let bit = index(fingerprint, row: row)
                    doorkeeper[bit >> 6] |= 1 << UInt64(bit & 63)
                }
                return
            }
            for row in 0..<FrequencySketch.depth {
                let slot = index(fingerprint, row: row)
                if counters[slot] < FrequencySketch.maxCount { counters[slot] += 1 }
            }
        }

        func estimate(_ fingerprint: UInt64) -> Int {
            var least = Int(FrequencySketch.maxCount)
            for row in 0..<FrequencySketch.depth { least = min(least, Int(counters[index(fingerprint, row: row)])) }
            return least + (inDoorkeeper(fingerprint) ? 1 : 0)
        }
    }
}
