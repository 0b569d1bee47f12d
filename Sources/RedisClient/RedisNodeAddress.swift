/// A Redis server's host and port, as a cluster names its nodes.
public struct RedisNodeAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// `host:port` as MOVED and ASK write it; an empty host (the node does not know its
    /// name) means the host of the node that answered.
    init?(endpoint: Substring, answeringHost: String) {
        guard let colon = endpoint.lastIndex(of: ":"), let port = Int(endpoint[endpoint.index(after: colon)...]) else {
            return nil
        }
        var host = endpoint[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        self.init(host: host.isEmpty || host == "?" ? answeringHost : String(host), port: port)
    }
}
