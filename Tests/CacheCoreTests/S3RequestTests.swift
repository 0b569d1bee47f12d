@testable import CacheCore
import Foundation
import Testing

@Suite struct S3RequestTests {
    let local = S3Endpoint(scheme: "http", host: "127.0.0.1", port: 9000)

    func location(_ url: String) throws -> S3Location { try S3Location.parse(url).get() }

    func path(_ names: String...) -> [[UInt8]] { names.map { Array($0.utf8) } }

    @Test(arguments: [
        ("s3://bucket/photos/", "bucket", "photos/"), ("s3://bucket/photos", "bucket", "photos/"),
        ("s3://bucket", "bucket", ""), ("s3://bucket/", "bucket", ""), ("s3://my.bucket-1/a/b c/", "my.bucket-1", "a/b c/"),
    ])
    func locations(url: String, bucket: String, prefix: String) throws {
        #expect(try location(url) == S3Location(bucket: bucket, prefix: Array(prefix.utf8)))
    }

    @Test(arguments: ["s3://", "s3://ab/x", "s3://has space/", "s3://bucket/a//b/", "s3://bucket/a?x=1",
                      "http://bucket/", "s3://\(String(repeating: "b", count: 64))/"])
    func badLocations(url: String) {
        #expect(throws: OriginURLError.self) { try S3Location.parse(url).get() }
    }

    @Test func keysJoinThePrefixAndTheComponents() throws {
        #expect(try location("s3://b1b/pre/").key(path("dir", "file.txt")) == Array("pre/dir/file.txt".utf8))
        #expect(try location("s3://b1b").key(path("file.txt")) == Array("file.txt".utf8))
        #expect(try location("s3://b1b/pre").listPrefix([]) == Array("pre/".utf8))
        #expect(try location("s3://b1b").listPrefix([]) == [])
        #expect(try location("s3://b1b/pre").listPrefix(path("dir")) == Array("pre/dir/".utf8))
    }

    @Test func objectRequestsArePathStyle() throws {
        let get = S3Request.object("GET", path("a b", "ü.txt"), at: try location("s3://bucket/pre/"), on: local)
        #expect(get.url == "http://127.0.0.1:9000/bucket/pre/a%20b/%C3%BC.txt")
        #expect(get.headers.isEmpty)
        let resumed = S3Request.object("GET", path("x"), at: try location("s3://bucket"), on: .aws(region: "eu-west-1"), from: 100)
        #expect(resumed.url == "https://s3.eu-west-1.amazonaws.com/bucket/x")
        #expect(resumed.headers == [S3Header("Range", "bytes=100-")])
        let head = S3Request.object("HEAD", path("raw"), at: try location("s3://bucket"), on: local)
        #expect(head.method == "HEAD" && head.encodedPath == "/bucket/raw")
    }

    @Test func listRequestsAskForOneDirectory() throws {
        let list = S3Request.list(path("sub dir"), at: try location("s3://bucket/pre/"), on: local, continuationToken: "t/1+")
        #expect(list.url == "http://127.0.0.1:9000/bucket?continuation-token=t%2F1%2B&delimiter=%2F&list-type=2&prefix=pre%2Fsub%20dir%2F")
        #expect(S3Request.list([], at: try location("s3://bucket"), on: local).url
            == "http://127.0.0.1:9000/bucket?delimiter=%2F&list-type=2&prefix=")
    }

    @Test func signedHeadersCarryTheHostAsSigned() throws {
        let signer = SignatureV4(credentials: AWSCredentials(accessKeyID: "AK", secretAccessKey: "SK"), region: "us-east-1")
        let request = S3Request.object("GET", path("f"), at: try location("s3://bucket"), on: local, from: 5)
        let headers = request.signedHeaders(signer, date: Date(timeIntervalSince1970: 0))
        #expect(headers.map(\.name) == ["Host", "Range", "x-amz-date", "x-amz-content-sha256", "Authorization"])
        #expect(headers[0].value == "127.0.0.1:9000")
        #expect(headers[4].value.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"))
    }

    @Test(arguments: [
        ("http://127.0.0.1:9000", S3Endpoint(scheme: "http", host: "127.0.0.1", port: 9000)),
        ("https://minio.example.com/", S3Endpoint(scheme: "https", host: "minio.example.com")),
        ("https://minio.example.com:443", S3Endpoint(scheme: "https", host: "minio.example.com")),
        ("HTTP://[::1]:8080", S3Endpoint(scheme: "http", host: "[::1]", port: 8080)),
        ("http://[::1]", S3Endpoint(scheme: "http", host: "[::1]")),
    ])
    func endpoints(text: String, endpoint: S3Endpoint) throws {
        #expect(try S3Endpoint.parse(text).get() == endpoint)
    }

    @Test(arguments: ["127.0.0.1:9000", "ftp://host", "http://", "http://host:0", "http://host:99999",
                      "http://host:port", "http://host/path", "http://user@host", "http://:80"])
    func badEndpoints(text: String) {
        #expect(throws: OriginURLError.self) { try S3Endpoint.parse(text).get() }
    }
}
