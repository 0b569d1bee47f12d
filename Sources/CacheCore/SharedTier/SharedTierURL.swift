import Foundation
import RedisClient

/// A pool's `user.cache.shared` value: `redis://[USER@]HOST:PORT/DB`, `rediss://…` (TLS), or a
/// Redis Cluster by its seed nodes, `redis+cluster://[USER@]H1:P1,H2:P2/` (`rediss+cluster://`
/// for TLS). Checked when it is set (a bad one answers EINVAL with this reason in the log),
/// again when a pool first uses it.
enum SharedTierURL {
    static func parse(_ text: String) -> Result<SharedTierLocation, SharedTierURLError> {
        let url = text.trimmingCharacters(in: .whitespaces)
        for (scheme, what) in [("s3://", "S3 (s3://)")] where url.hasPrefix(scheme) {
            return .failure(.init("\(what) is not supported by the shared tier yet; use redis://HOST:PORT/DB"))
        }
        if let cluster = parseCluster(url) { return cluster.map { SharedTierLocation.redisCluster($0) } }
        guard url.hasPrefix("redis://") || url.hasPrefix("rediss://") else {
            return .failure(.init("expected a URL such as redis://HOST:PORT/DB, rediss://USER@HOST:PORT/DB "
                                  + "or redis+cluster://HOST1:PORT1,HOST2:PORT2/"))
        }
        let parsed: RedisURL
        do {
            parsed = try RedisURL(parsing: url)
        } catch {
            return .failure(.init("\(error)"))
        }
        guard parsed.password == nil else {
            // The setting is stored in the index and shown by getfattr: no place for a secret.
            return .failure(.init("a password cannot be part of user.cache.shared (it is stored and shown); "
                                  + "give it at mount with -o shared_password_file=PATH"))
        }
        return .success(.redis(parsed))
    }

    /// A `redis+cluster://` or `rediss+cluster://` URL parsed, or nil for another scheme.
    private static func parseCluster(_ url: String) -> Result<RedisClusterSeeds, SharedTierURLError>? {
        for (scheme, tls) in [("redis+cluster://", false), ("rediss+cluster://", true)] where url.hasPrefix(scheme) {
            return RedisClusterSeeds.parse(afterScheme: url.dropFirst(scheme.count), usesTLS: tls)
        }
        return nil
    }

    /// `text` with whatever stands between `://` and the last `@` hidden, for the log.
    static func withoutCredentials(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text.lastIndex(of: "@"), scheme.upperBound <= at else {
            return text
        }
        return text[..<scheme.upperBound] + "***" + text[at...]
    }
}

struct SharedTierURLError: Error, Equatable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
