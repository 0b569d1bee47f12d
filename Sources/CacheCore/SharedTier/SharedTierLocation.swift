import RedisClient

/// Where a pool's `user.cache.shared` says its tier is, parsed (``SharedTierURL``).
enum SharedTierLocation: Sendable, Hashable, CustomStringConvertible {
    case redis(RedisURL)

    var description: String {
        switch self {
        case .redis(let url): return url.description
        }
    }

    /// A client for this location; it connects at its first command.
    func makeBackend(password: String?) throws -> any SharedTierBackend {
        switch self {
        case .redis(let url):
            var options = RedisConnectionOptions(url: url, password: password)
            // A connect past this fails the commands waiting for it; theirs are shorter anyway.
            options.connectTimeout = .seconds(2)
            return RedisTierBackend(try RedisClient(options: options))
        }
    }
}
