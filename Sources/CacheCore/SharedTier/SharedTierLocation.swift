import RedisClient

/// Where a pool's `user.cache.shared` says its tier is, parsed (``SharedTierURL``).
enum SharedTierLocation: Sendable, Hashable, CustomStringConvertible {
    case redis(RedisURL)
    /// A bucket and key prefix, reached as s3:// origins are (``S3TierBackend``).
    case s3(S3Location)

    var description: String {
        switch self {
        case .redis(let url): return url.description
        case .s3(let location): return "s3://\(location.bucket)/" + String(decoding: location.prefix, as: UTF8.self)
        }
    }

    /// A client for this location; it connects at its first command. `origins` gives S3 its
    /// HTTP client, endpoint and keys.
    func makeBackend(password: String?, origins: OriginContext) throws -> any SharedTierBackend {
        switch self {
        case .redis(let url):
            var options = RedisConnectionOptions(url: url, password: password)
            // A connect past this fails the commands waiting for it; theirs are shorter anyway.
            options.connectTimeout = .seconds(2)
            return RedisTierBackend(try RedisClient(options: options))
        case .s3(let location):
            return S3TierBackend(location: location, access: origins.s3, transport: origins.transport)
        }
    }
}
