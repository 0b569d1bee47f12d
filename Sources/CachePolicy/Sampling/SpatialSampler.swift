/// SHARDS' spatial sampling (Waldspurger et al., FAST '15): a request is sampled when its
/// key's hash falls below a threshold, so every request of a sampled key is seen and none
/// of the others. The rate is threshold / 2^24; its owner lowers it (by half) to bound the
/// memory of what it keeps per sampled key (see ``PolicyAdvisor``).
public struct SpatialSampler: Sendable {
    static let modulus: UInt64 = 1 << 24

    public private(set) var threshold: UInt64 = SpatialSampler.modulus

    public init() {}

    public var rate: Double { Double(threshold) / Double(Self.modulus) }

    static func position(_ fingerprint: UInt64) -> UInt64 {
        // Hashed again: the engine's fingerprints are mixed already, but a trace may use
        // small integers as keys.
        Fingerprint.mix(fingerprint) % modulus
    }

    public func samples(_ fingerprint: UInt64) -> Bool {
        Self.position(fingerprint) < threshold
    }

    /// Halves the rate; the keys no longer sampled are those `samples` now refuses.
    mutating func halve() {
        threshold = max(1, threshold / 2)
    }
}
