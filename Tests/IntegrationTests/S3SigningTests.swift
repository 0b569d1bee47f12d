import CacheCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Testing

/// The S3 request pieces of CacheCore (SigV4, path-style URLs, ListObjectsV2 and error
/// parsing) against a real S3 server, moto with its signature checks on, over URLSession.
@Suite struct S3SigningTests {
    /// A moto server whose bucket `origin-bucket` holds, under `pre/`, `a.txt`,
    /// `sub dir/ü b+c.txt` and `big.bin` (1000 bytes).
    func withServer(_ body: (S3OriginServer, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachefs-s3-\(UUID().uuidString)").path
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let files = directory + "/files"
        try FileManager.default.createDirectory(atPath: files + "/sub dir", withIntermediateDirectories: true)
        try Data("hello s3\n".utf8).write(to: URL(fileURLWithPath: files + "/a.txt"))
        try Data("encoded key\n".utf8).write(to: URL(fileURLWithPath: files + "/sub dir/ü b+c.txt"))
        try Data((0..<1000).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: files + "/big.bin"))
        let server = try S3OriginServer(bucket: "origin-bucket", upload: files, prefix: "pre/", session: true, logIn: directory)
        defer { server.stop() }
        try await body(server, files)
    }

    func endpoint(_ server: S3OriginServer) throws -> S3Endpoint { try S3Endpoint.parse(server.endpoint).get() }

    func signer(_ server: S3OriginServer, secret: String? = nil, accessKey: String? = nil) -> SignatureV4 {
        SignatureV4(credentials: AWSCredentials(accessKeyID: accessKey ?? server.accessKeyID,
                                                secretAccessKey: secret ?? server.secretAccessKey),
                    region: server.region)
    }

    /// Sends `request` with the headers `signer` computes (URLSession sets `Host` itself, to
    /// the same `host:port` the signature covers).
    func send(_ request: S3Request, _ signer: SignatureV4, payloadHash: String = SignatureV4.emptyPayloadHash)
        async throws -> (status: Int, body: Data, headers: [AnyHashable: Any]) {
        var urlRequest = URLRequest(url: try #require(URL(string: request.url)))
        urlRequest.httpMethod = request.method
        for header in request.signedHeaders(signer, payloadHash: payloadHash) where header.name != "Host" {
            urlRequest.setValue(header.value, forHTTPHeaderField: header.name)
        }
        let (body, response) = try await URLSession.shared.data(for: urlRequest)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, body, http.allHeaderFields)
    }

    func location() throws -> S3Location { try S3Location.parse("s3://origin-bucket/pre/").get() }

    func path(_ names: String...) -> [[UInt8]] { names.map { Array($0.utf8) } }

    @Test func signedGetsHeadsAndRangesAreAccepted() async throws {
        try await withServer { server, files in
            let get = try await send(.object("GET", path("a.txt"), at: try location(), on: try endpoint(server)), signer(server))
            #expect(get.status == 200)
            #expect(String(decoding: get.body, as: UTF8.self) == "hello s3\n")
            let encoded = try await send(.object("GET", path("sub dir", "ü b+c.txt"), at: try location(), on: try endpoint(server)),
                                         signer(server), payloadHash: SignatureV4.unsignedPayload)
            #expect(encoded.status == 200)
            #expect(String(decoding: encoded.body, as: UTF8.self) == "encoded key\n")
            let head = try await send(.object("HEAD", path("big.bin"), at: try location(), on: try endpoint(server)), signer(server))
            #expect(head.status == 200)
            #expect(head.headers["Content-Length"] as? String == "1000")
            let ranged = try await send(.object("GET", path("big.bin"), at: try location(), on: try endpoint(server), from: 990),
                                        signer(server))
            #expect(ranged.status == 206)
            #expect(ranged.body == (try Data(contentsOf: URL(fileURLWithPath: files + "/big.bin"))).suffix(10))
            #expect(server.requests() == ["GET /origin-bucket/pre/a.txt", "GET /origin-bucket/pre/sub%20dir/%C3%BC%20b%2Bc.txt",
                                          "HEAD /origin-bucket/pre/big.bin", "GET /origin-bucket/pre/big.bin bytes=990-"])
        }
    }

    @Test func aSignedListingOfEachDirectory() async throws {
        try await withServer { server, _ in
            let root = try await send(.list([], at: try location(), on: try endpoint(server)), signer(server))
            #expect(root.status == 200)
            let page = try ListObjectsV2Page.parse(root.body)
            #expect(!page.isTruncated)
            let names = page.names(under: try location().listPrefix([]))
                .map { ($0.kind == .directory ? "d:" : "f:") + String(decoding: $0.name, as: UTF8.self) }
            #expect(names.sorted() == ["d:sub dir", "f:a.txt", "f:big.bin"])
            let sub = try await send(.list(path("sub dir"), at: try location(), on: try endpoint(server)), signer(server))
            #expect(sub.status == 200)
            #expect(server.requests().last == "GET /origin-bucket?delimiter=%2F&list-type=2&prefix=pre%2Fsub%20dir%2F")
            #expect(try ListObjectsV2Page.parse(sub.body).names(under: try location().listPrefix(path("sub dir")))
                .map { String(decoding: $0.name, as: UTF8.self) } == ["ü b+c.txt"])
        }
    }

    @Test func aMissingKeyIs404NoSuchKey() async throws {
        try await withServer { server, _ in
            let missing = try await send(.object("GET", path("nothing.txt"), at: try location(), on: try endpoint(server)), signer(server))
            #expect(missing.status == 404)
            #expect(S3ErrorResponse.parse(missing.body)?.code == "NoSuchKey")
        }
    }

    @Test func temporaryCredentialsSignWithTheirSessionToken() async throws {
        try await withServer { server, _ in
            let session = try #require(server.session)
            let request = S3Request.object("GET", path("a.txt"), at: try location(), on: try endpoint(server))
            let withToken = SignatureV4(credentials: AWSCredentials(accessKeyID: session.accessKeyID, secretAccessKey: session.secretAccessKey,
                                                                    sessionToken: session.token), region: server.region)
            let accepted = try await send(request, withToken)
            #expect(accepted.status == 200)
            #expect(String(decoding: accepted.body, as: UTF8.self) == "hello s3\n")
            var withoutToken = withToken
            withoutToken.credentials.sessionToken = nil
            let tokenless = try await send(request, withoutToken)
            #expect(tokenless.status == 403)
            #expect(S3ErrorResponse.parse(tokenless.body)?.code == "InvalidAccessKeyId")
            var wrongToken = withToken
            wrongToken.credentials.sessionToken = "not-the-token"
            let refused = try await send(request, wrongToken)
            // 400, as AWS answers a bad token.
            #expect(refused.status == 400)
            #expect(S3ErrorResponse.parse(refused.body)?.code == "InvalidToken")
        }
    }

    @Test func wrongCredentialsAre403WithTheReason() async throws {
        try await withServer { server, _ in
            let request = S3Request.object("GET", path("a.txt"), at: try location(), on: try endpoint(server))
            let wrongSecret = try await send(request, signer(server, secret: "not-the-secret"))
            #expect(wrongSecret.status == 403)
            #expect(S3ErrorResponse.parse(wrongSecret.body)?.code == "SignatureDoesNotMatch")
            let unknownKey = try await send(request, signer(server, accessKey: "AKIAUNKNOWNKEY000000"))
            #expect(unknownKey.status == 403)
            let error = try #require(S3ErrorResponse.parse(unknownKey.body))
            #expect(error.code == "InvalidAccessKeyId")
            #expect(error.description.hasPrefix("InvalidAccessKeyId: The AWS Access Key Id you provided does not exist"))
        }
    }
}
