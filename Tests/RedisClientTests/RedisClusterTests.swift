import Foundation
import NIOCore
import Testing

@testable import RedisClient

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Against a real three-node Redis Cluster each.
@Suite(.timeLimit(.minutes(1))) struct RedisClusterTests {
    @Test func keysOnEveryNodeThroughOneSeed() throws {
        let cluster = try RedisClusterServers()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: [cluster.addresses[0]])
        defer { _ = client.close() }

        let keys = (0..<60).map { "spread-\($0)" }
        for key in keys { try client.setBlocking(bytes(key), bytes("value of \(key)")) }
        for key in keys { #expect(try client.getBlocking(bytes(key)) == bytes("value of \(key)")) }

        let owners = Set(keys.compactMap { client.owner(ofSlot: KeySlot.slot(of: bytes($0))) })
        #expect(owners == Set(cluster.addresses), "the keys' slots are served by \(owners)")
        // Each node holds some of them, as the nodes themselves say.
        for node in cluster.nodes {
            let count = try node.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect((Int(count) ?? 0) > 0, "node \(node.port) holds \(count) keys")
        }
        #expect(client.redirectCounts.moved == 0)
    }

    @Test func aCommandSentToTheWrongNodeFollowsMoved() throws {
        let cluster = try RedisClusterServers()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: [cluster.addresses[0]])
        defer { _ = client.close() }
        let key = bytes("moved-key")
        try client.setBlocking(key, bytes("here"))
        let slot = KeySlot.slot(of: key)
        let owner = try #require(client.owner(ofSlot: slot))
        let wrongNode = try #require(cluster.addresses.first { $0 != owner })

        client.assignSlot(slot, to: wrongNode)
        #expect(try client.getBlocking(key) == bytes("here"))
        #expect(client.redirectCounts.moved == 1)
        #expect(client.owner(ofSlot: slot) == owner, "the map was not corrected by MOVED")
    }

    @Test func aKeyMigratedHalfwayIsReadThroughAsk() throws {
        let cluster = try RedisClusterServers()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: [cluster.addresses[0]])
        defer { _ = client.close() }
        let moving = bytes("{migrating}moved")
        let staying = bytes("{migrating}stays")
        try client.setBlocking(moving, bytes("on the target"))
        try client.setBlocking(staying, bytes("on the source"))

        let slot = KeySlot.slot(of: moving)
        let sourceAddress = try #require(client.owner(ofSlot: slot))
        let source = try #require(cluster.nodes.first { $0.port == sourceAddress.port })
        let target = try #require(cluster.nodes.first { $0.port != sourceAddress.port })
        let sourceID = try source.cli(["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let targetID = try target.cli(["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try target.cli(["CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID]).contains("OK"))
        #expect(try source.cli(["CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID]).contains("OK"))
        let migrated = try source.cli(["MIGRATE", "127.0.0.1", String(target.port), "{migrating}moved", "0", "5000"])
        #expect(migrated.contains("OK"), "MIGRATE answered \(migrated)")

        #expect(try client.getBlocking(moving) == bytes("on the target"))
        #expect(client.redirectCounts.ask == 1)
        #expect(try client.getBlocking(staying) == bytes("on the source"))
        #expect(client.redirectCounts.ask == 1)
        // ASK is for one command: the slot still belongs to the source.
        #expect(client.owner(ofSlot: slot) == sourceAddress)
        #expect(client.redirectCounts.moved == 0)
    }

    @Test func redirectsAreBounded() throws {
        let cluster = try RedisClusterServers()
        defer { cluster.stop() }
        let client = try RedisClusterClient(seeds: [cluster.addresses[0]], maximumRedirects: 0)
        defer { _ = client.close() }
        let key = bytes("bounded")
        try client.setBlocking(key, bytes("x"))
        let slot = KeySlot.slot(of: key)
        let owner = try #require(client.owner(ofSlot: slot))
        client.assignSlot(slot, to: try #require(cluster.addresses.first { $0 != owner }))
        let error = #expect(throws: RedisError.self) { _ = try client.getBlocking(key) }
        guard case .tooManyRedirects? = error else {
            Issue.record("expected tooManyRedirects, got \(String(describing: error))")
            return
        }
    }
}
