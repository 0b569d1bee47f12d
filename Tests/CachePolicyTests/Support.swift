@testable import CachePolicy

/// A seeded generator (splitmix64), so every random test can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        return Fingerprint.mix(state)
    }
}

/// Zipf-distributed ranks over `objects` keys (rank 0 the most popular).
struct ZipfKeys {
    private var cumulative: [Double] = []

    init(objects: Int, alpha: Double) {
        var total = 0.0
        for rank in 0..<objects {
            total += 1 / pow(Double(rank + 1), alpha)
            cumulative.append(total)
        }
        cumulative = cumulative.map { $0 / total }
    }

    func next(_ generator: inout SeededGenerator) -> Int {
        let target = Double.random(in: 0..<1, using: &generator)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension ReplacementPolicy {
    /// Inserts keys whose fingerprint is the key itself.
    mutating func insert(_ keys: CacheKey...) {
        for key in keys { insert(key, fingerprint: UInt64(key), size: 1, cost: 1) }
    }

    /// Every victim until none is left.
    mutating func drain(isEligible: (CacheKey) -> Bool = { _ in true }) -> [CacheKey] {
        var victims: [CacheKey] = []
        while let victim = evict(isEligible: isEligible) { victims.append(victim) }
        return victims
    }
}

/// A trace of `get`s of 4 KiB objects.
func trace(_ keys: [Int]) -> [TraceRequest] {
    keys.map { TraceRequest(key: CacheKey($0), size: 4096) }
}

import Foundation
