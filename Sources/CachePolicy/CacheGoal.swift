/// What a pool's evictions try to save: the measure by which a miss is counted.
public enum CacheGoal: String, CaseIterable, Sendable, Codable {
    /// Fewest missed files: the object hit ratio. Every miss costs the same.
    case files
    /// Fewest missed bytes: the byte hit ratio (what an origin's egress bill counts). A miss
    /// costs the object's size.
    case bytes
    /// Least total miss cost: a miss costs the object's own cost (the time its fetch or its
    /// making took, in milliseconds).
    case cost

    /// What a miss of an object costs under this goal, from its size in bytes and its
    /// measured cost (milliseconds; used by `cost` only).
    public func cost(size: Int64, measured: Double) -> Double {
        switch self {
        case .files: return 1
        case .bytes: return Double(max(size, 1))
        case .cost: return max(measured, 0)
        }
    }

    /// The goal's measure, as figures name it.
    public var measureName: String {
        switch self {
        case .files: return "hit ratios"
        case .bytes: return "byte hit ratios"
        case .cost: return "shares of miss cost saved"
        }
    }
}
