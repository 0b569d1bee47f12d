/// What a Redis command or connection can fail with.
public enum RedisError: Error, Sendable, Hashable {
    /// The server answered with an error reply (the message as the server wrote it, e.g. `ERR ...`).
    case server(String)
    /// The server refused the credentials (`WRONGPASS`, `AUTH` refused) or wants some (`NOAUTH`).
    case authentication(String)
    /// The command's deadline passed before its reply came; the connection was closed.
    case timeout(String)
    /// No connection could be made (refused, unreachable, connect timeout, TLS setup or handshake).
    case connectionFailed(String)
    /// The connection closed or broke before the reply came.
    case connectionClosed(String)
    /// The server sent bytes that are not valid RESP2; the connection was closed.
    case protocolViolation(String)
    /// The reply had a type the typed helper did not expect.
    case unexpectedReply(String)
    /// A `redis://` or `rediss://` URL that cannot be used.
    case invalidURL(String)
    /// Redis Cluster kept redirecting (`MOVED`/`ASK`) past the allowed count.
    case tooManyRedirects(String)
    /// No Redis Cluster node could tell which node serves which slots.
    case clusterUnavailable(String)
    /// A blocking helper was called on an event-loop thread, where waiting would deadlock.
    case blockingCallOnEventLoop
}

extension RedisError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .server(let message): return "Redis error reply: \(message)"
        case .authentication(let message): return "Redis authentication failed: \(message)"
        case .timeout(let message): return "Redis command timed out: \(message)"
        case .connectionFailed(let message): return "Redis connection failed: \(message)"
        case .connectionClosed(let message): return "Redis connection closed: \(message)"
        case .protocolViolation(let message): return "Redis protocol violation: \(message)"
        case .unexpectedReply(let message): return "unexpected Redis reply: \(message)"
        case .invalidURL(let message): return "invalid Redis URL: \(message)"
        case .tooManyRedirects(let message): return "too many Redis Cluster redirects: \(message)"
        case .clusterUnavailable(let message): return "Redis Cluster unavailable: \(message)"
        case .blockingCallOnEventLoop:
            return "a blocking Redis call was made on an event-loop thread (it would deadlock)"
        }
    }

    /// The typed error for an error reply: credentials problems are told apart from the rest.
    static func fromReply(_ message: String) -> RedisError {
        if message.hasPrefix("WRONGPASS") || message.hasPrefix("NOAUTH") {
            return .authentication(message)
        }
        return .server(message)
    }
}
