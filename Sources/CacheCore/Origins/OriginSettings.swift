import CacheModel

/// How failing fetches are retried, the same for every origin pool of a mount, and where
/// s3:// origins send their requests.
public struct OriginSettings: Sendable, Equatable {
    /// The `s3_endpoint` mount option; nil means AWS's endpoint of the region.
    public var s3Endpoint: S3Endpoint?
    /// Tries of a failing fetch before readers get EIO.
    public var attempts = Tunables.fetchAttempts
    /// The wait before the first retry; it doubles before each further one.
    public var firstRetryDelaySeconds = Tunables.firstFetchRetrySeconds

    public init() {}
}
