import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A client of a Redis Cluster. It learns which node serves which slot from `CLUSTER SLOTS`
/// (asking the seeds first), sends each command to the node of its key's slot (the key is the
/// command's first argument; a command without one goes to the first seed), and follows `MOVED`
/// (updating the map, and refreshing it) and `ASK` (`ASKING`, then the command, on the node
/// named) up to `maximumRedirects` times.
public final class RedisClusterClient: RedisCommandSending {
    public let seeds: [RedisNodeAddress]
    public let maximumRedirects: Int
    /// The options of every node's connection (its host and port aside).
    private let nodeOptions: RedisConnectionOptions
    private let reconnectPolicy: RedisReconnectPolicy
    private let tlsContext: NIOSSLContext?
    private let eventLoopGroup: EventLoopGroup
    private let state = Mutex(ClusterState())

    public init(
        seeds: [RedisNodeAddress],
        username: String? = nil,
        password: String? = nil,
        tls: RedisTLSOptions? = nil,
        connectTimeout: TimeAmount = .seconds(5),
        commandTimeout: TimeAmount = .seconds(5),
        maximumRedirects: Int = 5,
        reconnectPolicy: RedisReconnectPolicy = RedisReconnectPolicy(),
        eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        guard !seeds.isEmpty else { throw RedisError.clusterUnavailable("no seed node given") }
        self.seeds = seeds
        self.maximumRedirects = maximumRedirects
        self.nodeOptions = RedisConnectionOptions(
            host: seeds[0].host, port: seeds[0].port, tls: tls, username: username, password: password,
            connectTimeout: connectTimeout, commandTimeout: commandTimeout)
        self.reconnectPolicy = reconnectPolicy
        self.tlsContext = try RedisConnection.makeTLSContext(tls)
        self.eventLoopGroup = eventLoopGroup
    }

    public var commandTimeout: TimeAmount { nodeOptions.commandTimeout }

    public func send(_ arguments: [[UInt8]], deadline: NIODeadline?) -> EventLoopFuture<RESPValue> {
        let deadline = deadline ?? .now() + nodeOptions.commandTimeout
        let slot = arguments.count > 1 ? KeySlot.slot(of: arguments[1]) : nil
        let loaded = state.withLock { $0.slotMapLoaded }
        let ready = loaded ? eventLoopGroup.next().makeSucceededVoidFuture() : refreshSlotMap(deadline: deadline)
        return ready.flatMap {
            self.attempt(arguments, slot: slot, redirectedTo: nil, asking: false, redirectsLeft: self.maximumRedirects, deadline: deadline)
        }
    }

    /// Closes every node's connection.
    public func close() -> EventLoopFuture<Void> {
        let clients = state.withLock { Array($0.nodes.values) }
        let loop = eventLoopGroup.next()
        return EventLoopFuture.andAllComplete(clients.map { $0.close() }, on: loop)
    }

    /// Reads `CLUSTER SLOTS` again, from a known node or a seed; joins a refresh under way.
    func refreshSlotMap(deadline: NIODeadline) -> EventLoopFuture<Void> {
        let loop = eventLoopGroup.next()
        enum Step { case join(EventLoopFuture<Void>), start(EventLoopPromise<Void>, [RedisNodeAddress]) }
        let step = state.withLock { state -> Step in
            if let refreshing = state.refreshing { return .join(refreshing) }
            let promise = loop.makePromise(of: Void.self)
            state.refreshing = promise.futureResult
            let known = state.slotMap.nodes.sorted { $0.description < $1.description }
            return .start(promise, known + seeds.filter { !known.contains($0) })
        }
        switch step {
        case .join(let refreshing):
            return refreshing
        case .start(let promise, let candidates):
            askForSlots(candidates[...], deadline: deadline, failures: []).whenComplete { result in
                self.state.withLock { state in
                    state.refreshing = nil
                    if case .success(let map) = result {
                        state.slotMap = map
                        state.slotMapLoaded = true
                    }
                }
                promise.completeWith(result.map { _ in })
            }
            return promise.futureResult
        }
    }

    /// Points `slot` at `address` (what a `MOVED` says).
    func assignSlot(_ slot: Int, to address: RedisNodeAddress) {
        state.withLock { $0.slotMap[slot] = address }
    }

    func owner(ofSlot slot: Int) -> RedisNodeAddress? {
        state.withLock { $0.slotMap[slot] }
    }

    var redirectCounts: (moved: Int, ask: Int) {
        state.withLock { ($0.movedRedirects, $0.askRedirects) }
    }

    private func askForSlots(
        _ candidates: ArraySlice<RedisNodeAddress>, deadline: NIODeadline, failures: [String]
    ) -> EventLoopFuture<ClusterSlotMap> {
        guard let candidate = candidates.first else {
            let why = failures.joined(separator: "; ")
            return eventLoopGroup.next().makeFailedFuture(
                RedisError.clusterUnavailable("no node answered CLUSTER SLOTS (\(why))"))
        }
        return node(candidate).send([Array("CLUSTER".utf8), Array("SLOTS".utf8)], deadline: deadline)
            .flatMapThrowing { reply in
                try ClusterSlotMap(clusterSlotsReply: reply, answeringHost: candidate.host)
            }
            .flatMapError { error in
                self.askForSlots(candidates.dropFirst(), deadline: deadline, failures: failures + ["\(candidate): \(error)"])
            }
    }

    private func attempt(
        _ arguments: [[UInt8]], slot: Int?, redirectedTo: RedisNodeAddress?, asking: Bool,
        redirectsLeft: Int, deadline: NIODeadline
    ) -> EventLoopFuture<RESPValue> {
        let target = redirectedTo ?? slot.flatMap { owner(ofSlot: $0) } ?? seeds[0]
        let client = node(target)
        let reply: EventLoopFuture<RESPValue>
        if asking {
            reply = client.connection(deadline: deadline).flatMap { connection in
                // ASKING lets only the next command on the same connection in: both go back to back.
                let askingReply = connection.send([Array("ASKING".utf8)], deadline: deadline)
                let commandReply = connection.send(arguments, deadline: deadline)
                return askingReply.flatMap { _ in commandReply }
            }
        } else {
            reply = client.send(arguments, deadline: deadline)
        }
        return reply.flatMapError { error in
            if Self.mayMeanTheMapChanged(error) {
                // A node gone or stalled may have been failed over: learn the map again for
                // the next command (this one fails: it may not be safe to send twice).
                _ = self.refreshSlotMap(deadline: .now() + self.nodeOptions.commandTimeout)
            }
            guard case RedisError.server(let message) = error,
                let redirection = ClusterRedirection(errorMessage: message, answeringHost: target.host)
            else { return reply.eventLoop.makeFailedFuture(error) }
            guard redirectsLeft > 0 else {
                return reply.eventLoop.makeFailedFuture(
                    RedisError.tooManyRedirects("gave up after \(self.maximumRedirects) redirects; the last: \(message)"))
            }
            switch redirection {
            case .moved(let movedSlot, let address):
                self.state.withLock { state in
                    state.slotMap[movedSlot] = address
                    state.movedRedirects += 1
                }
                // One slot moved often means more did: learn the whole map again, in the background.
                _ = self.refreshSlotMap(deadline: .now() + self.nodeOptions.commandTimeout)
                return self.attempt(
                    arguments, slot: slot, redirectedTo: address, asking: false,
                    redirectsLeft: redirectsLeft - 1, deadline: deadline)
            case .ask(_, let address):
                self.state.withLock { $0.askRedirects += 1 }
                return self.attempt(
                    arguments, slot: slot, redirectedTo: address, asking: true,
                    redirectsLeft: redirectsLeft - 1, deadline: deadline)
            }
        }
    }

    private static func mayMeanTheMapChanged(_ error: Error) -> Bool {
        switch error {
        case RedisError.connectionFailed, RedisError.connectionClosed, RedisError.timeout: return true
        default: return false
        }
    }

    /// The client of a node, made on first use.
    private func node(_ address: RedisNodeAddress) -> RedisClient {
        state.withLock { state in
            if let client = state.nodes[address] { return client }
            var options = nodeOptions
            options.host = address.host
            options.port = address.port
            let client = RedisClient(
                options: options, reconnectPolicy: reconnectPolicy, tlsContext: tlsContext,
                eventLoop: eventLoopGroup.next())
            state.nodes[address] = client
            return client
        }
    }
}
