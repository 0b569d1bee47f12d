/// What a pool admits of what it fetches (its `admit_max_size`, `admit_min_size` and
/// `admit_after` settings): a file within the sizes, at its `after`th miss. The one reading
/// of those bounds, for the pools (`PoolSettings.admits`) and for `cachefs replay`, whose
/// caches serve a miss they do not admit without keeping it.
public struct AdmissionRule: Sendable, Equatable {
    /// 0: no bound.
    public var maxSize: Int64
    public var minSize: Int64
    /// Misses of a file before it is kept (1: at the first).
    public var after: Int64

    public static let everything = AdmissionRule(maxSize: 0, minSize: 0, after: 1)

    public init(maxSize: Int64, minSize: Int64, after: Int64) {
        self.maxSize = maxSize
        self.minSize = minSize
        self.after = after
    }

    public func admits(size: Int64) -> Bool {
        (maxSize == 0 || size <= maxSize) && size >= minSize
    }
}
