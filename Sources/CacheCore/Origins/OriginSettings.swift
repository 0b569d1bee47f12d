/// How failing fetches are retried, the same for every origin pool of a mount.
public struct OriginSettings: Sendable, Equatable {
    /// Tries of a failing fetch before readers get EIO.
    public var attempts: Int = 3
    /// The wait before the first retry; it doubles before each further one.
    public var firstRetryDelaySeconds: Double = 0.5

    public init() {}
}
