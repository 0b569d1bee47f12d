import NIOCore
import RedisClient

/// Where a tier keeps its values: a Redis server or cluster, or (later) an S3 bucket. Both
/// calls block the calling thread until the answer or the deadline; a failure throws, a
/// value that is not there is nil.
protocol SharedTierBackend: Sendable {
    func value(at key: [UInt8], deadline: NIODeadline) throws -> [UInt8]?
    func store(_ value: [UInt8], at key: [UInt8], deadline: NIODeadline) throws
    /// Waits at most a second.
    func close()
}

/// A Redis server or cluster: `GET` and `SET`, through a client that reconnects by itself.
struct RedisTierBackend: SharedTierBackend {
    let client: any RedisCommandSending
    private let closing: @Sendable () -> EventLoopFuture<Void>

    init(_ client: RedisClient) {
        self.client = client
        closing = client.close
    }

    init(_ client: RedisClusterClient) {
        self.client = client
        closing = client.close
    }

    func value(at key: [UInt8], deadline: NIODeadline) throws -> [UInt8]? {
        try client.getBlocking(key, deadline: deadline)
    }

    func store(_ value: [UInt8], at key: [UInt8], deadline: NIODeadline) throws {
        try client.setBlocking(key, value, deadline: deadline)
    }

    func close() {
        do {
            try closing().wait()
        } catch {
            // Closing at unmount: a connection already gone has nothing left to close.
        }
    }
}
