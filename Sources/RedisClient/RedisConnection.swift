import NIOCore
import NIOPosix
import NIOSSL

/// One connection to one Redis server. Commands are pipelined: each is written at once,
/// and replies are matched to them in order. A command whose deadline passes fails with
/// `RedisError.timeout` and closes the connection (failing every other waiting command),
/// so a stalled server never holds a caller past its deadline.
///
/// A connection does not reconnect; `RedisClient` does.
public final class RedisConnection: RedisCommandSending {
    public let options: RedisConnectionOptions
    let channel: Channel
    private let health: ConnectionHealth

    public var eventLoop: EventLoop { channel.eventLoop }

    /// False once the connection broke or closed; it then never works again.
    public var isConnected: Bool { !health.isBroken && channel.isActive }

    private init(options: RedisConnectionOptions, channel: Channel, health: ConnectionHealth) {
        self.options = options
        self.channel = channel
        self.health = health
    }

    /// Connects, then authenticates and selects the database the options name.
    public static func connect(
        options: RedisConnectionOptions,
        eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) -> EventLoopFuture<RedisConnection> {
        let eventLoop = eventLoopGroup.next()
        let tlsContext: NIOSSLContext?
        do {
            tlsContext = try makeTLSContext(options.tls)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return connect(options: options, tlsContext: tlsContext, on: eventLoop)
    }

    /// `tlsContext` is built once by a client and shared by its reconnections.
    static func connect(
        options: RedisConnectionOptions, tlsContext: NIOSSLContext?, on eventLoop: EventLoop
    ) -> EventLoopFuture<RedisConnection> {
        let ready = NIODeadline.now() + options.connectTimeout
        let health = ConnectionHealth()
        let serverName = options.tls?.serverName ?? (isIPAddress(options.host) ? nil : options.host)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(options.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handlers = channel.pipeline.syncOperations
                    if let tlsContext {
                        try handlers.addHandler(NIOSSLClientHandler(context: tlsContext, serverHostname: serverName))
                    }
                    try handlers.addHandler(ByteToMessageHandler(RESPDecoder()))
                    try handlers.addHandler(RedisCommandHandler(health: health))
                }
            }
        let target = "\(options.host):\(options.port)"
        return bootstrap.connect(host: options.host, port: options.port)
            .flatMapErrorThrowing { error in
                throw RedisError.connectionFailed("\(target): \(error)")
            }
            .flatMap { channel in
                let connection = RedisConnection(options: options, channel: channel, health: health)
                return connection.prepare(deadline: ready)
                    .map { connection }
                    .flatMapError { error in
                        channel.close(promise: nil)
                        return eventLoop.makeFailedFuture(Self.connectError(error, target: target))
                    }
            }
    }

    public var commandTimeout: TimeAmount { options.commandTimeout }

    public func send(_ arguments: [[UInt8]], deadline: NIODeadline?) -> EventLoopFuture<RESPValue> {
        sendRaw(arguments, deadline: deadline ?? .now() + options.commandTimeout)
            .flatMapThrowing { value in
                if case .error(let message) = value { throw RedisError.fromReply(message) }
                return value
            }
    }

    /// Closes the connection; commands still waiting fail with `connectionClosed`.
    public func close() -> EventLoopFuture<Void> {
        let closed = channel.eventLoop.makePromise(of: Void.self)
        channel.close(promise: closed)
        // Closing an already closed channel is not a failure for the caller.
        return closed.futureResult.recover { _ in }
    }

    /// The reply as it came, error replies included.
    func sendRaw(_ arguments: [[UInt8]], deadline: NIODeadline) -> EventLoopFuture<RESPValue> {
        let reply = channel.eventLoop.makePromise(of: RESPValue.self)
        let request = RedisRequest(encoded: RESPEncoder.encodeCommand(arguments), reply: reply, deadline: deadline)
        // A write to a closed channel never reaches the handler: fail the reply here.
        channel.writeAndFlush(request).whenFailure { error in
            reply.fail(RedisError.connectionClosed("the command could not be written: \(error)"))
        }
        return reply.futureResult
    }

    /// AUTH and SELECT as the options ask; a PING when neither is needed, so a connection
    /// is only handed out once the server has answered on it (TLS handshake included).
    private func prepare(deadline: NIODeadline) -> EventLoopFuture<Void> {
        var steps: [EventLoopFuture<Void>] = []
        if let password = options.password {
            var auth: [[UInt8]] = [Array("AUTH".utf8)]
            if let username = options.username { auth.append(Array(username.utf8)) }
            auth.append(Array(password.utf8))
            steps.append(
                sendRaw(auth, deadline: deadline).flatMapThrowing { reply in
                    // Any refusal of AUTH is a credentials problem, whatever its prefix.
                    if case .error(let message) = reply { throw RedisError.authentication(message) }
                })
        }
        if options.database != 0 {
            steps.append(send([Array("SELECT".utf8), Array(String(options.database).utf8)], deadline: deadline).map { _ in })
        }
        if steps.isEmpty {
            steps.append(send([Array("PING".utf8)], deadline: deadline).map { _ in })
        }
        return EventLoopFuture.andAllSucceed(steps, on: channel.eventLoop)
    }

    /// Errors while preparing keep their kind when it says more than "could not connect".
    private static func connectError(_ error: Error, target: String) -> Error {
        switch error {
        case RedisError.authentication, RedisError.server, RedisError.connectionFailed:
            return error
        case RedisError.timeout:
            return RedisError.connectionFailed("\(target): the server did not answer before the connect timeout")
        default:
            return RedisError.connectionFailed("\(target): \(error)")
        }
    }

    static func makeTLSContext(_ tls: RedisTLSOptions?) throws -> NIOSSLContext? {
        guard let tls else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = tls.trustedCAFile {
            configuration.trustRoots = .file(caFile)
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw RedisError.connectionFailed("TLS setup: \(error)")
        }
    }

    private static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}
