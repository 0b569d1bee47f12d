import NIOCore

/// A command on its way to the server: its encoded bytes, the promise of its reply, its deadline.
struct RedisRequest: Sendable {
    let encoded: ByteBuffer
    let reply: EventLoopPromise<RESPValue>
    let deadline: NIODeadline
}

/// Matches replies to commands in order (Redis answers a connection's commands FIFO), and
/// breaks the connection when a command's deadline passes, when the server sends what is not
/// RESP, or when the channel closes: every command still waiting then fails.
///
/// Its state is confined to the channel's event loop (NIO calls a handler only there), so it
/// needs no lock.
final class RedisCommandHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = ByteBuffer

    private struct Waiting {
        let id: UInt64
        let reply: EventLoopPromise<RESPValue>
        let timer: Scheduled<Void>
    }

    private var waiting = CircularBuffer<Waiting>()
    private var nextID: UInt64 = 0
    /// Set once the connection is broken; later commands fail with it at once.
    private var brokenBy: RedisError?
    private let health: ConnectionHealth

    init(health: ConnectionHealth) {
        self.health = health
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = Self.unwrapOutboundIn(data)
        if let brokenBy {
            request.reply.fail(brokenBy)
            promise?.fail(brokenBy)
            return
        }
        guard request.deadline > .now() else {
            // Not sent at all, so the connection stays good.
            request.reply.fail(RedisError.timeout("the deadline had passed before the command was sent"))
            promise?.succeed()
            return
        }
        let id = nextID
        nextID += 1
        let timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: request.deadline) {
            self.commandTimedOut(id: id, context: context)
        }
        waiting.append(Waiting(id: id, reply: request.reply, timer: timer))
        context.write(Self.wrapOutboundOut(request.encoded), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let value = Self.unwrapInboundIn(data)
        guard let command = waiting.popFirst() else {
            breakConnection(
                context: context,
                error: .protocolViolation("a reply came with no command waiting for it: \(value)"))
            return
        }
        command.timer.cancel()
        command.reply.succeed(value)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let decodingError = error as? RESPDecodingError {
            breakConnection(context: context, error: .protocolViolation(decodingError.description))
        } else {
            breakConnection(context: context, error: .connectionClosed("\(error)"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        breakConnection(context: context, error: .connectionClosed("the connection to the server closed"))
        context.fireChannelInactive()
    }

    private func commandTimedOut(id: UInt64, context: ChannelHandlerContext) {
        guard waiting.contains(where: { $0.id == id }) else { return }
        breakConnection(
            context: context,
            error: .connectionClosed("closed because an earlier command on it timed out"),
            timedOut: id)
    }

    /// Fails every waiting command (the one that timed out with `.timeout`) and closes.
    private func breakConnection(context: ChannelHandlerContext, error: RedisError, timedOut: UInt64? = nil) {
        guard brokenBy == nil else { return }
        brokenBy = error
        // Marked before the promises fail, so a caller woken by them never picks this connection again.
        health.markBroken()
        let failed = waiting
        waiting.removeAll()
        for command in failed {
            command.timer.cancel()
            if command.id == timedOut {
                command.reply.fail(RedisError.timeout("no reply before the command's deadline"))
            } else {
                command.reply.fail(error)
            }
        }
        context.close(promise: nil)
    }
}
