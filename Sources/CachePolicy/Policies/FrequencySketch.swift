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

    /// Columns per resident the sketch keeps at least, and grows to (see `ensureWidth`).
    static let leastColumnsPerResident = 4.5
    static let grownColumnsPerResident = 5.5

    init(width requested: Int = 64) {
        // A whole number of doorkeeper words per row.
        let width = max(64, (requested + 63) / 64 * 64)
        self.width = width
        residents = width / 4
        counters = Array(repeating: 0, count: width * Self.depth / 2)
        doorkeeper = Array(repeating: 0, count: width / 64 * Self.depth)
    }

    /// Keeps 4.5 to 5.5 columns per resident (Caffeine's sketch keeps 16 counters per element
    /// of its maximum size, 4 columns of 4 rows): below 4.5 it grows to 5.5. With 1 to 4
    /// columns per resident (it grew only past 1) collisions cost up to 0.018 of hit ratio
    /// against libCacheSim's W-TinyLFU (zipf-0.6 at 5 %: 0.236 against 0.253; now 0.251); a
    /// power of two of 4 to 8 columns did as well, but took up to 20 bytes a resident, and 4
    /// to 5 lost 0.006 on `shift` at 25 % (docs/eviction-policies.md).
    ///
    /// Growing keeps every count: a fingerprint's column is `hash × width / 2⁶⁴`, so a column of
    /// the grown sketch covers the hashes of at most two old columns, and starts with the
    /// larger of their counters (and either's doorkeeper bit). No estimate goes down; one may
    /// go up by a neighbour's count, as a collision would. (Before, a sketch that grew forgot
    /// every count, which a restore of a whole pool did several times over.)
    mutating func ensureWidth(for residents: Int) {
        self.residents = max(self.residents, residents)
        guard Double(residents) * Self.leastColumnsPerResident > Double(width) else { return }
        var grown = FrequencySketch(width: Int((Double(residents) * Self.grownColumnsPerResident).rounded(.up)))
        for row in 0..<Self.depth {
            for column in 0..<grown.width {
                let first = row * width + column * width / grown.width
                let last = row * width + ((column + 1) * width - 1) / grown.width
                let new = row * grown.width + column
                grown.setCounter(new, to: max(counter(first), counter(last)))
                if isDoorkeeperBitSet(first) || isDoorkeeperBitSet(last) {
                    grown.doorkeeper[new >> 6] |= 1 << UInt64(new & 63)
                }
            }
        }
        grown.increments = increments
        grown.residents = self.residents
        self = grown
    }

    private func isDoorkeeperBitSet(_ bit: Int) -> Bool { doorkeeper[bit >> 6] & (1 << UInt64(bit & 63)) != 0 }

    private func index(_ fingerprint: UInt64, row: Int) -> Int {
        var hash = fingerprint &+ UInt64(row + 1) &* 0x9e37_79b9_7f4a_7c15
        hash = (hash ^ (hash >> 31)) &* 0xbf58_476d_1ce4_e5b9
        hash ^= hash >> 29
        return row * width + Int(hash.multipliedFullWidth(by: UInt64(width)).high)
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
