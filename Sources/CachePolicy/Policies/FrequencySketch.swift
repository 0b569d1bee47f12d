/// A count-min sketch of 4-bit counters with a doorkeeper bloom filter and periodic
/// halving, as W-TinyLFU and Caffeine's `FrequencySketch` use it: the estimated number of
/// recent requests of a fingerprint, in a few bytes per resident object. Two counters share a
/// byte, as Caffeine packs sixteen in a long.
struct FrequencySketch: Sendable {
    static let depth = 4
    static let maxCount: UInt8 = 15
    /// The most `estimate` answers: a saturated count and the doorkeeper's bit.
    static let maxEstimate = Int(maxCount) + 1
    /// Halve every counter after this many increments per resident (the most the cache has
    /// held), so old popularity fades: 25 cache-fulls of requests. Caffeine halves after 10 ×
    /// its maximum size; here that lost up to 0.015 on the bench's unit-size traces, and 40
    /// to 80 (10 per column, when the width decided it) lost up to 0.011 on `shift`, whose
    /// popularity moves (docs/eviction-policies.md).
    static let sampleFactor = 25

    private(set) var width: Int
    /// Counter `i` is the low (even `i`) or high (odd `i`) half of byte `i / 2`.
    private var counters: [UInt8]
    private var doorkeeper: [UInt64]
    private var increments = 0
    /// The most residents the cache has held (at first, a quarter of the width).
    private var residents: Int

    /// The counters' and the doorkeeper's bytes (see ``ReplacementPolicy/memoryBytes``).
    var memoryBytes: Int { MemoryBytes.of(counters) + MemoryBytes.of(doorkeeper) }

    init(width requested: Int = 64) {
        var width = 64
        while width < requested { width <<= 1 }
        self.width = width
        residents = width / 4
        counters = Array(repeating: 0, count: width * Self.depth / 2)
        doorkeeper = Array(repeating: 0, count: width / 64 * Self.depth)
    }

    /// Keeps 4 to 8 columns per resident, as Caffeine's sketch has 16 counters per element
    /// of its maximum size. Growing only past one column per resident left 1.03 at a pool of
    /// 498 files, where collisions cost up to 0.018 of hit ratio against libCacheSim's
    /// W-TinyLFU (zipf-0.6 at 5 %: 0.236 against 0.253; now 0.253).
    ///
    /// Growing keeps every count: a fingerprint's column is the low bits of its hash, so in
    /// a sketch 2^k times as wide it is one of the 2^k columns whose low bits are its old
    /// column's, and each of them starts with the old counter (and doorkeeper bit). Every
    /// estimate is then what it was. (Before, a sketch that grew forgot, which a restore of
    /// a whole pool did several times over.)
    mutating func ensureWidth(for residents: Int) {
        self.residents = max(self.residents, residents)
        guard residents * 4 > width else { return }
        var grown = FrequencySketch(width: residents * 4)
        for row in 0..<Self.depth {
            for column in 0..<grown.width {
                let old = row * width + (column & (width - 1))
                let new = row * grown.width + column
                grown.setCounter(new, to: counter(old))
                if doorkeeper[old >> 6] & 1 << UInt64(old & 63) != 0 {
                    grown.doorkeeper[new >> 6] |= 1 << UInt64(new & 63)
                }
            }
        }
        grown.increments = increments
        grown.residents = self.residents
        self = grown
    }

    private func index(_ fingerprint: UInt64, row: Int) -> Int {
        var hash = fingerprint &+ UInt64(row + 1) &* 0x9e37_79b9_7f4a_7c15
        hash = (hash ^ (hash >> 31)) &* 0xbf58_476d_1ce4_e5b9
        hash ^= hash >> 29
        return row * width + Int(hash & UInt64(width - 1))
    }

    private func doorkeeperBit(_ fingerprint: UInt64, row: Int) -> (word: Int, mask: UInt64) {
        let bit = index(fingerprint, row: row) // within row * width ..< (row + 1) * width
        return (bit >> 6, 1 << UInt64(bit & 63))
    }

    private func inDoorkeeper(_ fingerprint: UInt64) -> Bool {
        (0..<Self.depth).allSatisfy { row in
            let (word, mask) = doorkeeperBit(fingerprint, row: row)
            return doorkeeper[word] & mask != 0
        }
    }

    mutating func increment(_ fingerprint: UInt64) {
        increments += 1
        if increments >= residents * Self.sampleFactor { age() }
        // The first request only enters the doorkeeper: one-hit wonders cost no counter.
        guard inDoorkeeper(fingerprint) else {
            for row in 0..<Self.depth {
                let (word, mask) = doorkeeperBit(fingerprint, row: row)
                doorkeeper[word] |= mask
            }
            return
        }
        for row in 0..<Self.depth {
            let slot = index(fingerprint, row: row)
            if counter(slot) < Self.maxCount { counters[slot >> 1] &+= 1 << Self.shift(of: slot) }
        }
    }

    func estimate(_ fingerprint: UInt64) -> Int {
        var least = Int(Self.maxCount)
        for row in 0..<Self.depth { least = min(least, Int(counter(index(fingerprint, row: row)))) }
        return least + (inDoorkeeper(fingerprint) ? 1 : 0)
    }

    private static func shift(of slot: Int) -> UInt8 { UInt8(slot & 1) << 2 }

    private func counter(_ slot: Int) -> UInt8 { (counters[slot >> 1] >> Self.shift(of: slot)) & 0x0f }

    private mutating func setCounter(_ slot: Int, to value: UInt8) {
        let shift = Self.shift(of: slot)
        counters[slot >> 1] = (counters[slot >> 1] & ~(0x0f << shift)) | (value << shift)
    }

    private mutating func age() {
        increments = 0
        // Both halves of a byte halve at once: each shifts down, the high one's lowest bit
        // masked off where it would fall into the low one.
        for byte in counters.indices { counters[byte] = (counters[byte] >> 1) & 0x77 }
        for word in doorkeeper.indices { doorkeeper[word] = 0 }
    }
}
