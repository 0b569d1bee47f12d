import Foundation

/// Three real `redis-server` cluster nodes on loopback made into one Redis Cluster by
/// `redis-cli --cluster create` (no replicas: each node serves a third of the slots), TLS
/// only with `certificates`. Each node's bus port is a free port of its own
/// (`cluster-port`), so no node needs its port + 10000 free. Killed when released.
final class SharedTierRedisCluster {
    let nodes: [SharedTierRedis]

    init(certificates: SharedTierCertificates? = nil) throws {
        var nodes: [SharedTierRedis] = []
        for _ in 0..<3 {
            var arguments = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                             "--cluster-node-timeout", "5000", "--cluster-port", String(try LoopbackPort.free())]
            if certificates != nil { arguments += ["--tls-cluster", "yes"] }
            nodes.append(try SharedTierRedis(certificates: certificates, arguments: arguments))
        }
        self.nodes = nodes
        let created = try nodes[0].cli(["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
                                       + ["--cluster-replicas", "0", "--cluster-yes"])
        guard created.succeeded else {
            throw MountError(message: "redis-cli --cluster create failed: \(created.output)\(created.error)")
        }
        var states: [String] = []
        let ready = try Shell.waitUntil(seconds: 15) {
            states = try nodes.map { try $0.cli(["CLUSTER", "INFO"]).output }
            return states.allSatisfy { $0.contains("cluster_state:ok") }
        }
        guard ready else {
            throw MountError(message: "the cluster did not reach cluster_state:ok; CLUSTER INFO:\n\(states.joined(separator: "\n---\n"))")
        }
    }

    /// The pools' `user.cache.shared` value: every node a seed, by address (what the nodes
    /// announce, so a TLS certificate must name 127.0.0.1).
    var url: String {
        let tls = nodes[0].certificates != nil
        return "\(tls ? "rediss" : "redis")+cluster://" + nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") + "/"
    }

    /// `INFO commandstats` of `command` (`get`, `set`) on each node: the calls it ran, and those
    /// it rejected (a `MOVED` or `ASK` reply counts there: the key was not the node's).
    func commandStats(_ command: String) throws -> [(calls: Int, rejected: Int)] {
        try nodes.map { node in
            let info = try node.cli(["INFO", "commandstats"])
            guard info.succeeded else { throw MountError(message: "INFO commandstats failed: \(info.error)") }
            // cmdstat_get:calls=4,usec=20,usec_per_call=5.00,rejected_calls=0,failed_calls=0
            guard let line = info.output.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") })
            else { return (0, 0) }
            var fields: [String: Int] = [:]
            for pair in line.drop(while: { $0 != ":" }).dropFirst().split(separator: ",") {
                let parts = pair.split(separator: "=")
                if parts.count == 2 { fields[String(parts[0])] = Int(parts[1]) }
            }
            func field(_ name: String) -> Int { fields[name] ?? -1 }
            return (field("calls"), field("rejected_calls"))
        }
    }

    /// The cachefs keys each node holds, node by node.
    func keysByNode() throws -> [[String]] {
        try nodes.map { node in
            let listed = try node.cli(["--scan", "--pattern", "cachefs:*"])
            guard listed.succeeded else { throw MountError(message: "redis-cli --scan failed: \(listed.error)") }
            return listed.output.split(separator: "\n").map(String.init).sorted()
        }
    }
}
