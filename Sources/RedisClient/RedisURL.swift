/// A parsed `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]` or `rediss://...` (TLS) URL.
///
/// User and password may be percent-encoded. Its `description` never shows the password.
public struct RedisURL: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var database: Int
    public var username: String?
    public var password: String?
    public var usesTLS: Bool

    public static let defaultPort = 6379

    public init(parsing text: String) throws(RedisError) {
        let tls: Bool
        var rest: Substring
        if text.hasPrefix("redis://") {
            tls = false
            rest = text.dropFirst("redis://".count)
        } else if text.hasPrefix("rediss://") {
            tls = true
            rest = text.dropFirst("rediss://".count)
        } else {
            throw .invalidURL("the scheme must be redis:// or rediss:// (in \(Self.redacted(text)))")
        }
        guard !rest.contains("?"), !rest.contains("#") else {
            throw .invalidURL("query and fragment parts are not supported (in \(Self.redacted(text)))")
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = credentials[..<colon]
                username = user.isEmpty ? nil : try Self.percentDecoded(user, what: "user name")
                password = try Self.percentDecoded(credentials[credentials.index(after: colon)...], what: "password")
            } else if !credentials.isEmpty {
                username = try Self.percentDecoded(credentials, what: "user name")
            }
        }
        let authority: Substring
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard path.allSatisfy(\.isASCII), let number = Int(path), number >= 0 else {
                    throw .invalidURL("the database must be a number 0 or more, not \"\(path)\"")
                }
                database = number
            }
        } else {
            authority = rest
        }
        let (host, port) = try Self.hostAndPort(authority)
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
        self.usesTLS = tls
    }

    private static func hostAndPort(_ authority: Substring) throws(RedisError) -> (String, Int) {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1]:6379
            guard let close = authority.firstIndex(of: "]") else {
                throw .invalidURL("an IPv6 host is missing its \"]\"")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidURL("unexpected \"\(after)\" after the host") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw .invalidURL("the host is missing") }
        guard !host.contains(where: { $0 == " " || $0 == "@" || $0 == "/" }) else {
            throw .invalidURL("the host \"\(host)\" is not a host name")
        }
        var port = defaultPort
        if let portText {
            guard portText.allSatisfy(\.isASCII), let number = Int(portText), (1...65535).contains(number) else {
                throw .invalidURL("the port must be a number from 1 to 65535, not \"\(portText)\"")
            }
            port = number
        }
        return (String(host), port)
    }

    private static func percentDecoded(_ text: Substring, what: String) throws(RedisError) -> String {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            else {
                throw .invalidURL("the \(what) has a bad percent escape")
            }
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The URL text with anything between "://" and "@" hidden, for error messages.
    private static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let colon = text.firstIndex(of: ":"), colon < at else {
            return text
        }
        let scheme = text[..<colon]
        return scheme + "://***" + text[at...]
    }
}

extension RedisURL: CustomStringConvertible {
    public var description: String {
        var credentials = ""
        if username != nil || password != nil {
            credentials = (username ?? "") + (password == nil ? "" : ":***") + "@"
        }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "rediss" : "redis")://\(credentials)\(shownHost):\(port)/\(database)"
    }
}
