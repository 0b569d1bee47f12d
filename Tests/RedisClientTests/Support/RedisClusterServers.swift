import Foundation
import RedisClient

/// Three real `redis-server` cluster nodes on loopback, made into one cluster by
/// `redis-cli --cluster create` (no replicas). `stop()` kills them all.
final class RedisClusterServers {
    let nodes: [RedisServer]

    var addresses: [RedisNodeAddress] { nodes.map { RedisNodeAddress(host: "127.0.0.1", port: $0.port) } }

    init() throws {
        var started: [RedisServer] = []
        do {
            for _ in 0..<3 {
                started.append(
                    try RedisServer(arguments: [
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000",
                    ]))
            }
            nodes = started
            try RedisServer.run(
                RedisServer.executable("redis-cli"),
                ["--cluster", "create"] + started.map { "127.0.0.1:\($0.port)" }
                    + ["--cluster-replicas", "0", "--cluster-yes"])
            try waitUntilStateOK()
        } catch {
            started.forEach { $0.stop() }
            throw error
        }
    }

    func stop() {
        nodes.forEach { $0.stop() }
    }

    /// Polls `CLUSTER INFO` on every node until each says `cluster_state:ok` (10 s at most).
    private func waitUntilStateOK() throws {
        let start = Date()
        var last = ""
        while Date().timeIntervalSince(start) < 10 {
            let states = try nodes.map { try $0.cli(["CLUSTER", "INFO"]) }
            if states.allSatisfy({ $0.contains("cluster_state:ok") }) { return }
            last = states.joined(separator: "\n---\n")
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestSetupError("the cluster did not reach cluster_state:ok within 10 s; last CLUSTER INFO:\n\(last)")
    }
}
