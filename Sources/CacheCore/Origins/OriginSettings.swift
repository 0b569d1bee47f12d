/// How read-through pools behave, the same for every origin pool of a mount (mount options).
public struct OriginSettings: Sendable, Equatable {
    /// How long a name the origin lacks is answered ENOENT without asking it again.
    public var negativeTTLSeconds: Int64 = 30
    /// Concurrent fetches per pool; further fetches wait for a slot.
    public var maxFetches: Int = 4
    /// Tries of a failing fetch before readers get EIO.
    public var attempts: Int = 3
    /// The wait before the first retry; it doubles before each further one.
    public var firstRetryDelaySeconds: Double = 0.5

    public init() {}
}
