import NIOCore
import RedisClient

/// Where a pool's `user.cache.shared` says its tier is, parsed (``SharedTierURL``).
enum SharedTierLocation: Sendable, Hashable, CustomStringConvertible {
    /// One server, `redis://` or `rediss://` (TLS).
    case redis(RedisURL)
    /// A Redis Cluster by its seed nodes (``RedisClusterSeeds``).
    case redisCluster(RedisClusterSeeds)

    var description: String {
        switch self {
        case .redis(let url): return url.description
        case .redisCluster(let cluster): return cluster.description
        }
    }

    /// A client for this location; it connects at its first command. `trustedCAFile` is the
    /// mount's `shared_ca_file`: the CA bundle a TLS server's certificate must verify against
    /// (the system's trust store when nil). A certificate that does not verify fails the
    /// connection, as any other connect failure does: never a fallback to plain TCP.
    func makeBackend(password: String?, trustedCAFile: String? = nil) throws -> any SharedTierBackend {
        // A connect past this fails the commands waiting for it; theirs are shorter anyway.
        let connectTimeout = TimeAmount.seconds(2)
        switch self {
        case .redis(let url):
            var options = RedisConnectionOptions(url: url, password: password)
            options.connectTimeout = connectTimeout
            options.tls?.trustedCAFile = trustedCAFile
            return RedisTierBackend(try RedisClient(options: options))
        case .redisCluster(let cluster):
            let tls = cluster.usesTLS ? RedisTLSOptions(trustedCAFile: trustedCAFile) : nil
            return RedisTierBackend(try RedisClusterClient(seeds: cluster.seeds, username: cluster.username,
                                                           password: password, tls: tls,
                                                           connectTimeout: connectTimeout))
        }
    }
}
