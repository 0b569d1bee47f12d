import Dispatch
import NIOCore
import NIOPosix
import Synchronization

/// What can send a Redis command: a connection, a reconnecting client, a cluster client.
/// The typed and blocking helpers are built on `send`.
public protocol RedisCommandSending: Sendable {
    /// Sends one command (its name first, then its arguments, each binary safe). The future
    /// fails with `RedisError.server` for an error reply, `RedisError.timeout` once `deadline`
    /// (the options' command timeout from now when `nil`) has passed.
    func send(_ arguments: [[UInt8]], deadline: NIODeadline?) -> EventLoopFuture<RESPValue>

    /// A command's deadline when the caller gives none: this long from when it is sent.
    var commandTimeout: TimeAmount { get }
}

extension RedisCommandSending {
    public func send(_ arguments: [[UInt8]]) -> EventLoopFuture<RESPValue> {
        send(arguments, deadline: nil)
    }

    /// The value of `key`, or `nil` when there is none.
    public func get(_ key: [UInt8], deadline: NIODeadline? = nil) -> EventLoopFuture<[UInt8]?> {
        send([Array("GET".utf8), key], deadline: deadline).flatMapThrowing { reply in
            guard case .bulkString(let value) = reply else { throw RedisError.unexpectedReply("GET answered \(reply)") }
            return value
        }
    }

    /// Sets `key` to `value`, expiring after `expireSeconds` when given.
    public func set(
        _ key: [UInt8], _ value: [UInt8], expireSeconds: Int? = nil, deadline: NIODeadline? = nil
    ) -> EventLoopFuture<Void> {
        var arguments = [Array("SET".utf8), key, value]
        if let expireSeconds {
            arguments += [Array("EX".utf8), Array(String(expireSeconds).utf8)]
        }
        return send(arguments, deadline: deadline).flatMapThrowing { reply in
            guard reply == .simpleString("OK") else { throw RedisError.unexpectedReply("SET answered \(reply)") }
        }
    }

    public func exists(_ key: [UInt8], deadline: NIODeadline? = nil) -> EventLoopFuture<Bool> {
        send([Array("EXISTS".utf8), key], deadline: deadline).flatMapThrowing { reply in
            guard case .integer(let count) = reply else { throw RedisError.unexpectedReply("EXISTS answered \(reply)") }
            return count > 0
        }
    }

    /// Deletes the keys; the number of keys that existed. (On a cluster, all keys must share a slot.)
    public func del(_ keys: [[UInt8]], deadline: NIODeadline? = nil) -> EventLoopFuture<Int> {
        send([Array("DEL".utf8)] + keys, deadline: deadline).flatMapThrowing { reply in
            guard case .integer(let count) = reply else { throw RedisError.unexpectedReply("DEL answered \(reply)") }
            return Int(count)
        }
    }

    public func ping(deadline: NIODeadline? = nil) -> EventLoopFuture<Void> {
        send([Array("PING".utf8)], deadline: deadline).flatMapThrowing { reply in
            guard reply == .simpleString("PONG") else { throw RedisError.unexpectedReply("PING answered \(reply)") }
        }
    }
}

/// The same commands for plain threads (cachefs's callers are not async code). Each waits for
/// its future, so it returns by its deadline; it throws `blockingCallOnEventLoop` rather than
/// wait on an event-loop thread, where waiting would deadlock.
extension RedisCommandSending {
    public func sendBlocking(_ arguments: [[UInt8]], deadline: NIODeadline? = nil) throws -> RESPValue {
        let deadline = deadline ?? .now() + commandTimeout
        return try waitOffEventLoop(until: deadline, send(arguments, deadline: deadline))
    }

    public func getBlocking(_ key: [UInt8], deadline: NIODeadline? = nil) throws -> [UInt8]? {
        let deadline = deadline ?? .now() + commandTimeout
        return try waitOffEventLoop(until: deadline, get(key, deadline: deadline))
    }

    public func setBlocking(
        _ key: [UInt8], _ value: [UInt8], expireSeconds: Int? = nil, deadline: NIODeadline? = nil
    ) throws {
        let deadline = deadline ?? .now() + commandTimeout
        try waitOffEventLoop(until: deadline, set(key, value, expireSeconds: expireSeconds, deadline: deadline))
    }

    public func existsBlocking(_ key: [UInt8], deadline: NIODeadline? = nil) throws -> Bool {
        let deadline = deadline ?? .now() + commandTimeout
        return try waitOffEventLoop(until: deadline, exists(key, deadline: deadline))
    }

    @discardableResult
    public func delBlocking(_ keys: [[UInt8]], deadline: NIODeadline? = nil) throws -> Int {
        let deadline = deadline ?? .now() + commandTimeout
        return try waitOffEventLoop(until: deadline, del(keys, deadline: deadline))
    }

    public func pingBlocking(deadline: NIODeadline? = nil) throws {
        let deadline = deadline ?? .now() + commandTimeout
        try waitOffEventLoop(until: deadline, ping(deadline: deadline))
    }
}

/// Waits for `future` on a plain thread. The future fails by `deadline` by itself (the
/// command's timer); the wait still ends a second past it, so a bug there can never leave a
/// caller stuck.
private func waitOffEventLoop<Value: Sendable>(
    until deadline: NIODeadline, _ future: @autoclosure () -> EventLoopFuture<Value>
) throws -> Value {
    guard MultiThreadedEventLoopGroup.currentEventLoop == nil else {
        throw RedisError.blockingCallOnEventLoop
    }
    let outcome = Outcome<Value>()
    future().whenComplete { result in outcome.complete(result) }
    let backstop = max(0, (deadline - .now()).nanoseconds) + TimeAmount.seconds(1).nanoseconds
    guard outcome.done.wait(timeout: .now() + .nanoseconds(Int(backstop))) == .success else {
        throw RedisError.timeout("no answer even a second past the deadline")
    }
    return try outcome.result.withLock { $0! }.get()
}

/// A result handed from an event loop to the thread waiting for it.
private final class Outcome<Value: Sendable>: Sendable {
    let result = Mutex<Result<Value, Error>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func complete(_ value: Result<Value, Error>) {
        result.withLock { $0 = value }
        done.signal()
    }
}
