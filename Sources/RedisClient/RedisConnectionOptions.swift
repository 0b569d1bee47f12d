import NIOCore

/// TLS for a `rediss://` connection: the server's certificate is verified against the
/// system's roots, or against the CA certificates of `trustedCAFile` (PEM) when given.
public struct RedisTLSOptions: Sendable, Hashable {
    public var trustedCAFile: String?
    /// The name the server's certificate must carry, also sent as SNI; the host by default.
    public var serverName: String?

    public init(trustedCAFile: String? = nil, serverName: String? = nil) {
        self.trustedCAFile = trustedCAFile
        self.serverName = serverName
    }
}

/// Where and how to connect. Its `description` never shows the password.
public struct RedisConnectionOptions: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var tls: RedisTLSOptions?
    public var username: String?
    public var password: String?
    public var database: Int
    /// The longest a connection may take to be ready: TCP, TLS, and AUTH/SELECT (or a PING).
    public var connectTimeout: TimeAmount
    /// A command's deadline when the caller gives none.
    public var commandTimeout: TimeAmount

    public init(
        host: String,
        port: Int = RedisURL.defaultPort,
        tls: RedisTLSOptions? = nil,
        username: String? = nil,
        password: String? = nil,
        database: Int = 0,
        connectTimeout: TimeAmount = .seconds(5),
        commandTimeout: TimeAmount = .seconds(5)
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    /// Options from a URL. A `password` given here (read from a separate file, say) wins over
    /// one in the URL.
    public init(url: RedisURL, password: String? = nil) {
        self.init(
            host: url.host,
            port: url.port,
            tls: url.usesTLS ? RedisTLSOptions() : nil,
            username: url.username,
            password: password ?? url.password,
            database: url.database)
    }
}

extension RedisConnectionOptions: CustomStringConvertible {
    public var description: String {
        let user = username.map { "user \($0), " } ?? ""
        let secret = password == nil ? "no password" : "password set"
        return "\(tls == nil ? "redis" : "rediss") \(host):\(port) db \(database) (\(user)\(secret))"
    }
}
