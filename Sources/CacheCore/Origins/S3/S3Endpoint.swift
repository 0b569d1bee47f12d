/// The server S3 requests go to: the `s3_endpoint` option (`http://127.0.0.1:9000`), or AWS's
/// regional endpoint.
public struct S3Endpoint: Sendable, Equatable {
    public var scheme: String
    public var host: String
    /// Nil for the scheme's default port.
    public var port: Int?

    public init(scheme: String, host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `https://s3.REGION.amazonaws.com`.
    public static func aws(region: String) -> S3Endpoint {
        S3Endpoint(scheme: "https", host: "s3.\(region).amazonaws.com")
    }

    /// `http://HOST[:PORT]` or `https://HOST[:PORT]`, with nothing after the authority but
    /// an optional `/`. IPv6 hosts are written in brackets: `http://[::1]:9000`.
    public static func parse(_ text: String) -> Result<S3Endpoint, OriginURLError> {
        let bad = OriginURLError("s3_endpoint must be http://HOST[:PORT] or https://HOST[:PORT], not \"\(text)\"")
        guard let separator = text.range(of: "://") else { return .failure(bad) }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return .failure(bad) }
        var authority = Substring(text[separator.upperBound...])
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else { return .failure(bad) }
        var host = authority
        var port: Int?
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                return .failure(bad)
            }
            host = authority[..<colon]
            port = number == (scheme == "https" ? 443 : 80) ? nil : number
        }
        guard !host.isEmpty else { return .failure(bad) }
        return .success(S3Endpoint(scheme: scheme, host: String(host), port: port))
    }

    /// The `Host` header of a request, as signed.
    public var hostHeader: String { port.map { "\(host):\($0)" } ?? host }

    public var baseURL: String { "\(scheme)://\(hostHeader)" }
}
