/// SHARDS' spatial sampling (Waldspurger et al., FAST '15), fixed-size: a request is
/// sampled when its key's hash falls below a threshold, so every request of a sampled key
/// is seen and none of the others. At most `maxKeys` distinct sampled keys are tracked;
/// past that the threshold halves and the keys above it are dropped, so memory is bounded
/// whatever the traffic. The rate is threshold / 2^24.
public struct SpatialSampler: Sendable {
    static let modulus: UInt64 = 1 << 24

    public let maxKeys: Int
    public private(set) var threshold: UInt64 = SpatialSampler.modulus
    private var keys: Set<UInt64> = []

    public init(maxKeys: Int) {
        self.maxKeys = maxKeys
    }

    public var rate: Double { Double(threshold) / Double(Self.modulus) }
    public var trackedKeys: Int { keys.count }

    static func position(_ fingerprint: UInt64) -> UInt64 {
        // The low bits are hashed again: fingerprints of the engine and of traces are already
        // mixed, but a trace may use small integers as keys.
        Fingerprint.mix(fingerprint) % modulus
    }

    /// Whether the request is sampled. `dropped` gets the keys the threshold just left out
    /// (the caller's simulations forget them).
    public mutating func sample(_ fingerprint: UInt64, dropped: (UInt64) -> Void) -> Bool {
        guard Self.position(fingerprint) < threshold else { return false }
        guard keys.insert(fingerprint).inserted, keys.count > maxKeys else { return true }
        while keys.count > maxKeys && threshold > 1 {
            threshold /= 2
            for key in keys where Self.position(key) >= threshold {
                keys.remove(key)
                dropped(key)
            }
        }
        return Self.position(fingerprint) < threshold
    }
}
