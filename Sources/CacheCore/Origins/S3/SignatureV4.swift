import Crypto
import Foundation
import Glibc

/// A header of a signed request. Names are compared without regard to case.
public struct S3Header: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) { self.name = name; self.value = value }
}

/// A query parameter, neither name nor value encoded yet.
public struct S3QueryItem: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String = "") { self.name = name; self.value = value }
}

/// AWS Signature Version 4 for header-based authentication
/// (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).
public struct SignatureV4: Sendable {
    /// The payload hash for a body that is not signed (S3 accepts it on any request).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of an empty body: the payload hash of a GET or HEAD.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (with a session token) and `Authorization`. `host` is the
    /// `Host` header the request carries (with `:port` unless the scheme's default);
    /// `encodedPath` is the path exactly as sent (see ``S3Encoding``); `headers` are the
    /// others to sign (e.g. `Range`), which the request must carry unchanged.
    public func headers(method: String, host: String, encodedPath: String, query: [S3QueryItem] = [],
                        headers: [S3Header] = [], payloadHash: String, date: Date) -> [S3Header] {
        let timestamp = Self.timestamp(date)
        var added = [S3Header("x-amz-date", timestamp), S3Header("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(S3Header("x-amz-security-token", token)) }
        let canonical = Self.canonicalHeaders([S3Header("host", host)] + headers + added)
        let request = [method, encodedPath, Self.canonicalQuery(query), canonical.lines, "",
                       canonical.names, payloadHash].joined(separator: "\n")
        let scope = "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", timestamp, scope,
                            S3Encoding.hex(SHA256.hash(data: Data(request.utf8)))].joined(separator: "\n")
        let signature = S3Encoding.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8),
                                                                       using: signingKey(day: String(timestamp.prefix(8)))))
        added.append(S3Header("Authorization",
                              "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope),"
                                  + "SignedHeaders=\(canonical.names),Signature=\(signature)"))
        return added
    }

    /// `name=value` pairs, each encoded (`/` too), sorted, joined by `&`: the canonical
    /// query, and also the query string to send.
    public static func canonicalQuery(_ query: [S3QueryItem]) -> String {
        let encoded: [(name: String, value: String)] = query.map {
            (S3Encoding.encode($0.name), S3Encoding.encode($0.value))
        }
        let sorted = encoded.sorted { left, right in
            left.name == right.name ? left.value < right.value : left.name < right.name
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    private func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// Lower-case names sorted, values trimmed with inner runs of spaces made one, repeated
    /// names joined by commas.
    private static func canonicalHeaders(_ headers: [S3Header]) -> (lines: String, names: String) {
        var values: [String: [String]] = [:]
        for header in headers {
            let value = header.value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            values[header.name.lowercased(), default: []].append(value)
        }
        let sorted = values.sorted { $0.key < $1.key }
        return (sorted.map { "\($0.key):\($0.value.joined(separator: ","))" }.joined(separator: "\n"),
                sorted.map(\.key).joined(separator: ";"))
    }
}
