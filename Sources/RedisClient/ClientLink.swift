import NIOCore

/// A `RedisClient`'s connection state; only reachable inside the client's `Mutex`.
struct ClientLink {
    enum State {
        case idle
        case connecting(EventLoopFuture<RedisConnection>)
        case connected(RedisConnection)
        /// The last connect failed; until `until`, commands fail at once with its error.
        case backingOff(until: NIODeadline, error: Error)
        case shutDown
    }

    enum Step {
        case use(RedisConnection)
        case wait(EventLoopFuture<RedisConnection>)
        case fail(Error)
        /// The caller must connect and complete this promise (outside the lock).
        case connect(EventLoopPromise<RedisConnection>)
    }

    var state: State = .idle
    /// The backoff after the next failed connect.
    var nextDelay: TimeAmount

    init(nextDelay: TimeAmount) {
        self.nextDelay = nextDelay
    }

    mutating func nextStep(now: NIODeadline, eventLoop: EventLoop) -> Step {
        switch state {
        case .connected(let connection) where connection.isConnected:
            return .use(connection)
        case .connecting(let future):
            return .wait(future)
        case .backingOff(let until, let error) where now < until:
            return .fail(error)
        case .shutDown:
            return .fail(RedisError.connectionClosed("the client was closed"))
        case .idle, .connected, .backingOff:
            let promise = eventLoop.makePromise(of: RedisConnection.self)
            state = .connecting(promise.futureResult)
            return .connect(promise)
        }
    }

    /// Records a connect's outcome; false when the client was closed meanwhile and a new
    /// connection must be closed, not kept.
    mutating func connectEnded(
        _ result: Result<RedisConnection, Error>, now: NIODeadline, policy: RedisReconnectPolicy
    ) -> Bool {
        guard case .connecting = state else { return false }
        switch result {
        case .success(let connection):
            state = .connected(connection)
            nextDelay = policy.initialDelay
        case .failure(let error):
            state = .backingOff(until: now + nextDelay, error: error)
            nextDelay = min(nextDelay * 2, policy.maximumDelay)
        }
        return true
    }
}
