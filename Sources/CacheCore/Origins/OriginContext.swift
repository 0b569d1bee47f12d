/// What the origins of one mount share: the HTTP client of http(s):// and s3:// origins, and
/// where and as whom s3:// origins send their requests.
public final class OriginContext: Sendable {
    let transport: HTTPTransport
    let s3: S3Access

    init(transport: HTTPTransport, s3: S3Access) {
        self.transport = transport
        self.s3 = s3
    }

    /// For checking URLs only: nothing is contacted, so no credentials are read.
    static func forChecking() -> OriginContext {
        OriginContext(transport: HTTPTransport(),
                      s3: S3Access(endpoint: nil, region: "us-east-1",
                                   credentials: .failure(AWSCredentialsError("not read when a URL is checked"))))
    }
}

/// Where s3:// origins send their requests (the `s3_endpoint` mount option, else AWS's
/// endpoint of the region) and the keys they sign them with, read once at mount.
struct S3Access: Sendable {
    var endpoint: S3Endpoint?
    var region: String
    var credentials: Result<AWSCredentials, AWSCredentialsError>

    static func load(endpoint: S3Endpoint?) -> S3Access {
        S3Access(endpoint: endpoint, region: AWSCredentials.region(),
                 credentials: Result { () throws(AWSCredentialsError) in try AWSCredentials.load() })
    }

    var resolvedEndpoint: S3Endpoint { endpoint ?? .aws(region: region) }
}
