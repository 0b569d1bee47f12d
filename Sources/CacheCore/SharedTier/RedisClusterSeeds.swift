import RedisClient

/// A Redis Cluster as a pool's `user.cache.shared` names it: `redis+cluster://[USER@]H1:P1,H2:P2/`
/// (`rediss+cluster://` for TLS). The seeds are only where the client first asks `CLUSTER SLOTS`;
/// each key then goes to the node of its slot. A cluster has one database, 0.
struct RedisClusterSeeds: Sendable, Hashable, CustomStringConvertible {
    var seeds: [RedisNodeAddress]
    var username: String?
    var usesTLS: Bool

    var description: String {
        let user = username.map { "\($0)@" } ?? ""
        return "\(usesTLS ? "rediss" : "redis")+cluster://\(user)\(seeds.map(\.description).joined(separator: ","))/"
    }

    /// Parses what follows the scheme; each seed as a `redis://` URL's host and port would be.
    static func parse(afterScheme rest: Substring, usesTLS: Bool) -> Result<RedisClusterSeeds, SharedTierURLError> {
        var rest = rest
        guard !rest.contains("?"), !rest.contains("#") else {
            return .failure(.init("query and fragment parts are not supported in a Redis Cluster's URL"))
        }
        var username: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            guard !credentials.contains(":") else {
                // The setting is stored in the index and shown by getfattr: no place for a secret.
                return .failure(.init("a password cannot be part of user.cache.shared (it is stored and shown); "
                                      + "give it at mount with -o shared_password_file=PATH"))
            }
            do {
                // Percent-decoded as a redis:// URL's user name is.
                username = try RedisURL(parsing: "redis://\(credentials)@localhost").username
            } catch {
                return .failure(.init("\(error)"))
            }
            rest = rest[rest.index(after: at)...]
        }
        var nodes = rest
        if let slash = rest.firstIndex(of: "/") {
            nodes = rest[..<slash]
            let database = rest[rest.index(after: slash)...]
            guard database.isEmpty || database == "0" else {
                return .failure(.init("a Redis Cluster has database 0 only, not \"\(database)\""))
            }
        }
        guard !nodes.isEmpty else {
            return .failure(.init("a Redis Cluster needs at least one seed node, as in redis+cluster://HOST1:PORT1,HOST2:PORT2/"))
        }
        var seeds: [RedisNodeAddress] = []
        for node in nodes.split(separator: ",", omittingEmptySubsequences: false) {
            guard !node.isEmpty else { return .failure(.init("a Redis Cluster's seed list has an empty entry")) }
            do {
                let url = try RedisURL(parsing: "redis://" + node)
                seeds.append(RedisNodeAddress(host: url.host, port: url.port))
            } catch {
                return .failure(.init("bad seed node \"\(node)\": \(error)"))
            }
        }
        return .success(RedisClusterSeeds(seeds: seeds, username: username, usesTLS: usesTLS))
    }
}
