import Foundation

/// One S3 request, ready to sign and send. Path-style addressing everywhere
/// (`ENDPOINT/BUCKET/KEY`): it works with AWS and with every S3-compatible server (MinIO,
/// Ceph, moto), needs no DNS per bucket, and keeps TLS valid for bucket names with dots.
public struct S3Request: Sendable, Equatable {
    public var method: String
    public var endpoint: S3Endpoint
    /// `/BUCKET/KEY`, encoded once as S3 wants (see ``S3Encoding``).
    public var encodedPath: String
    public var query: [S3QueryItem]
    /// Headers to send and sign besides those the signature adds (e.g. `Range`).
    public var headers: [S3Header]

    /// The URL to send, with the query in its canonical form.
    public var url: String {
        let query = SignatureV4.canonicalQuery(query)
        return endpoint.baseURL + encodedPath + (query.isEmpty ? "" : "?" + query)
    }

    /// Every header to send: `Host`, the request's own, and the signature's.
    public func signedHeaders(_ signer: SignatureV4, payloadHash: String = SignatureV4.emptyPayloadHash,
                              date: Date = Date()) -> [S3Header] {
        [S3Header("Host", endpoint.hostHeader)] + headers
            + signer.headers(method: method, host: endpoint.hostHeader, encodedPath: encodedPath,
                             query: query, headers: headers, payloadHash: payloadHash, date: date)
    }

    /// `GET` (the bytes, from `offset` on if not 0) or `HEAD` (size, ETag) of the object
    /// a name stands for.
    public static func object(_ method: String, _ path: [[UInt8]], at location: S3Location,
                              on endpoint: S3Endpoint, from offset: Int64 = 0) -> S3Request {
        S3Request(method: method, endpoint: endpoint,
                  encodedPath: "/" + S3Encoding.encode(location.bucket) + "/"
                      + S3Encoding.encode(location.key(path), keepingSlash: true),
                  query: [], headers: offset > 0 ? [S3Header("Range", "bytes=\(offset)-")] : [])
    }

    /// One page of ListObjectsV2 of a directory: its objects and, as common prefixes, its
    /// subdirectories.
    public static func list(_ directory: [[UInt8]], at location: S3Location, on endpoint: S3Endpoint,
                            continuationToken: String? = nil) -> S3Request {
        var query = [S3QueryItem("list-type", "2"), S3QueryItem("delimiter", "/"),
                     S3QueryItem("prefix", String(decoding: location.listPrefix(directory), as: UTF8.self))]
        if let continuationToken { query.append(S3QueryItem("continuation-token", continuationToken)) }
        return S3Request(method: "GET", endpoint: endpoint, encodedPath: "/" + S3Encoding.encode(location.bucket),
                         query: query, headers: [])
    }
}
