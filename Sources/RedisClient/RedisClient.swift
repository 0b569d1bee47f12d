import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A client of one Redis server that keeps one pipelined connection and replaces it by itself:
/// the next command after a failure connects again (after a backoff when connects fail).
public final class RedisClient: RedisCommandSending {
    public let options: RedisConnectionOptions
    public let reconnectPolicy: RedisReconnectPolicy
    /// Every connection and future of this client lives on this loop.
    public let eventLoop: EventLoop
    private let tlsContext: NIOSSLContext?
    private let link: Mutex<ClientLink>

    /// A client of the server a `redis://` or `rediss://` URL names. `password` (read from a
    /// separate file, say) wins over one in the URL.
    public convenience init(
        url: String,
        password: String? = nil,
        reconnectPolicy: RedisReconnectPolicy = RedisReconnectPolicy(),
        eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        let options = RedisConnectionOptions(url: try RedisURL(parsing: url), password: password)
        try self.init(options: options, reconnectPolicy: reconnectPolicy, eventLoopGroup: eventLoopGroup)
    }

    /// Throws when the TLS options cannot be used (a CA file that cannot be read, say).
    /// Connecting waits for the first command.
    public convenience init(
        options: RedisConnectionOptions,
        reconnectPolicy: RedisReconnectPolicy = RedisReconnectPolicy(),
        eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.init(
            options: options, reconnectPolicy: reconnectPolicy,
            tlsContext: try RedisConnection.makeTLSContext(options.tls), eventLoop: eventLoopGroup.next())
    }

    init(
        options: RedisConnectionOptions, reconnectPolicy: RedisReconnectPolicy,
        tlsContext: NIOSSLContext?, eventLoop: EventLoop
    ) {
        self.options = options
        self.reconnectPolicy = reconnectPolicy
        self.tlsContext = tlsContext
        self.eventLoop = eventLoop
        self.link = Mutex(ClientLink(nextDelay: reconnectPolicy.initialDelay))
    }

    public var commandTimeout: TimeAmount { options.commandTimeout }

    public func send(_ arguments: [[UInt8]], deadline: NIODeadline?) -> EventLoopFuture<RESPValue> {
        let deadline = deadline ?? .now() + options.commandTimeout
        return connection(deadline: deadline).flatMap { $0.send(arguments, deadline: deadline) }
    }

    /// Closes the connection; later commands fail.
    public func close() -> EventLoopFuture<Void> {
        let previous = link.withLock { link in
            defer { link.state = .shutDown }
            return link.state
        }
        switch previous {
        case .connected(let connection):
            return connection.close()
        case .connecting(let future):
            return future.flatMap { $0.close() }.recover { _ in }
        case .idle, .backingOff, .shutDown:
            return eventLoop.makeSucceededVoidFuture()
        }
    }

    /// The live connection, a connect under way, or a new connect; it fails at `deadline` at
    /// the latest (the connect goes on for the next command).
    func connection(deadline: NIODeadline) -> EventLoopFuture<RedisConnection> {
        let now = NIODeadline.now()
        let step = link.withLock { link in link.nextStep(now: now, eventLoop: eventLoop) }
        switch step {
        case .use(let connection):
            return eventLoop.makeSucceededFuture(connection)
        case .fail(let error):
            return eventLoop.makeFailedFuture(error)
        case .wait(let future):
            return future.failing(at: deadline)
        case .connect(let promise):
            RedisConnection.connect(options: options, tlsContext: tlsContext, on: eventLoop)
                .whenComplete { result in
                    let keep = self.link.withLock { link in
                        link.connectEnded(result, now: .now(), policy: self.reconnectPolicy)
                    }
                    guard keep else {
                        // The client was closed while connecting.
                        if case .success(let connection) = result { _ = connection.close() }
                        promise.fail(RedisError.connectionClosed("the client was closed"))
                        return
                    }
                    promise.completeWith(result)
                }
            return promise.futureResult.failing(at: deadline)
        }
    }
}

extension EventLoopFuture where Value: Sendable {
    /// This future, or a `timeout` failure if it has not completed by `deadline`.
    fileprivate func failing(at deadline: NIODeadline) -> EventLoopFuture<Value> {
        let result = eventLoop.makePromise(of: Value.self)
        let timer = eventLoop.scheduleTask(deadline: deadline) {
            result.fail(RedisError.timeout("no connection to the server was ready before the deadline"))
        }
        whenComplete { outcome in
            timer.cancel()
            result.completeWith(outcome)
        }
        return result.futureResult
    }
}
