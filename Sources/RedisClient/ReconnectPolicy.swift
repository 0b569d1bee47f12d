import NIOCore

/// How long a client waits before it tries a server again after a failed connect: commands in
/// that time fail at once with the connect's error (no storm of connects to a down server).
/// The wait doubles after each failed connect, up to `maximumDelay`, and resets on success.
public struct RedisReconnectPolicy: Sendable, Hashable {
    public var initialDelay: TimeAmount
    public var maximumDelay: TimeAmount

    public init(initialDelay: TimeAmount = .milliseconds(100), maximumDelay: TimeAmount = .seconds(5)) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }
}
