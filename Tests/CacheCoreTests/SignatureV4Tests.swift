@testable import CacheCore
import Foundation
import Testing

/// The example signatures of AWS's "Signature Calculations for the Authorization Header"
/// (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).
@Suite struct SignatureV4Tests {
    let signer = SignatureV4(credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                         secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                             region: "us-east-1")
    /// 20130524T000000Z
    let date = Date(timeIntervalSince1970: 1_369_353_600)
    let host = "examplebucket.s3.amazonaws.com"

    func authorization(_ headers: [S3Header]) -> String? {
        headers.first { $0.name == "Authorization" }?.value
    }

    @Test func getObjectWithRange() {
        let headers = signer.headers(method: "GET", host: host, encodedPath: "/test.txt",
                                     headers: [S3Header("Range", "bytes=0-9")],
                                     payloadHash: SignatureV4.emptyPayloadHash, date: date)
        #expect(authorization(headers) == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(headers.first { $0.name == "x-amz-date" }?.value == "20130524T000000Z")
        #expect(headers.first { $0.name == "x-amz-content-sha256" }?.value == SignatureV4.emptyPayloadHash)
        #expect(!headers.contains { $0.name == "x-amz-security-token" })
    }

    @Test func putObjectWhoseKeyNeedsEncoding() {
        let headers = signer.headers(method: "PUT", host: host, encodedPath: "/" + S3Encoding.encode("test$file.text", keepingSlash: true),
                                     headers: [S3Header("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                                               S3Header("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                                     payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", date: date)
        #expect(authorization(headers) == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
            + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func getBucketLifecycle() {
        let headers = signer.headers(method: "GET", host: host, encodedPath: "/", query: [S3QueryItem("lifecycle")],
                                     payloadHash: SignatureV4.emptyPayloadHash, date: date)
        #expect(authorization(headers)?.hasSuffix(
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
    }

    @Test func listObjectsWithItsQueryOutOfOrder() {
        let headers = signer.headers(method: "GET", host: host, encodedPath: "/",
                                     query: [S3QueryItem("prefix", "J"), S3QueryItem("max-keys", "2")],
                                     payloadHash: SignatureV4.emptyPayloadHash, date: date)
        #expect(authorization(headers)?.hasSuffix(
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)
    }

    @Test func aSessionTokenIsSentAndSigned() {
        var withToken = signer
        withToken.credentials.sessionToken = "token/with+chars="
        let headers = withToken.headers(method: "GET", host: host, encodedPath: "/test.txt",
                                        payloadHash: SignatureV4.unsignedPayload, date: date)
        #expect(headers.first { $0.name == "x-amz-security-token" }?.value == "token/with+chars=")
        #expect(authorization(headers)?.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
        let without = signer.headers(method: "GET", host: host, encodedPath: "/test.txt",
                                     payloadHash: SignatureV4.unsignedPayload, date: date)
        #expect(authorization(headers) != authorization(without))
    }

    @Test func headerValuesAreTrimmedAndTheirInnerSpacesCollapsed() {
        let tidy = signer.headers(method: "GET", host: host, encodedPath: "/test.txt",
                                  headers: [S3Header("Range", "bytes=0-9")],
                                  payloadHash: SignatureV4.emptyPayloadHash, date: date)
        let untidy = signer.headers(method: "GET", host: host, encodedPath: "/test.txt",
                                    headers: [S3Header("RANGE", "  bytes=0-9 ")],
                                    payloadHash: SignatureV4.emptyPayloadHash, date: date)
        #expect(authorization(tidy) == authorization(untidy))
    }

    @Test func timestampsAreUTC() {
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 1_700_000_000.9)) == "20231114T221320Z")
        #expect(SignatureV4.timestamp(Date(timeIntervalSince1970: 0)) == "19700101T000000Z")
    }

    @Test func theCanonicalQueryEncodesEverythingButUnreservedBytes() {
        #expect(SignatureV4.canonicalQuery([S3QueryItem("prefix", "a b/ü+"), S3QueryItem("delimiter", "/"),
                                            S3QueryItem("list-type", "2")])
            == "delimiter=%2F&list-type=2&prefix=a%20b%2F%C3%BC%2B")
        #expect(SignatureV4.canonicalQuery([S3QueryItem("b", "2"), S3QueryItem("b", "1"), S3QueryItem("a")]) == "a=&b=1&b=2")
        #expect(SignatureV4.canonicalQuery([]) == "")
    }

    @Test func keysAreEncodedOnceWithTheirSlashesKept() {
        #expect(S3Encoding.encode("photos/2024 summer/a+b~c_d-e.f%.jpg", keepingSlash: true)
            == "photos/2024%20summer/a%2Bb~c_d-e.f%25.jpg")
        #expect(S3Encoding.encode([0x00, 0xFF, 0x2F]) == "%00%FF%2F")
    }
}
