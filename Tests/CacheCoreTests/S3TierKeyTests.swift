@testable import CacheCore
import Crypto
import Foundation
import Testing

/// An s3:// shared tier without a server: the object key of a tier key (valid UTF-8, one
/// object per name, within S3's length), the setting's parsing, and the signature of a PUT.
@Suite struct S3TierKeyTests {
    /// The inverse of ``S3TierKey/escaped(_:)``: every `%XX` is a byte, everything else is itself.
    func unescaped(_ key: [UInt8]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var index = 0
        while index < key.count {
            if key[index] == UInt8(ascii: "%") {
                let hex = try #require(String(bytes: key[index + 1...index + 2], encoding: .ascii))
                bytes.append(try #require(UInt8(hex, radix: 16)))
                index += 3
            } else {
                bytes.append(key[index])
                index += 1
            }
        }
        return bytes
    }

    func isValidUTF8(_ bytes: [UInt8]) -> Bool { String(validating: bytes, as: UTF8.self) != nil }

    @Test(arguments: [
        ("cachefs:1:thumbnails/a b.jpg", "cachefs:1:thumbnails/a b.jpg"),
        ("cachefs:1:p/ü 日本.txt", "cachefs:1:p/ü 日本.txt"),
        ("cachefs:1:p/100%.jpg", "cachefs:1:p/100%25.jpg"),
        ("cachefs:1:p/%FF", "cachefs:1:p/%25FF"),
    ])
    func validUTF8StaysAsItIsButPercent(name: String, key: String) {
        #expect(S3TierKey.escaped(Array(name.utf8)) == Array(key.utf8))
    }

    @Test(arguments: [
        ([0xFF], "%FF"),                                  // never a UTF-8 byte
        ([0x61, 0xC3], "a%C3"),                           // a sequence cut short
        ([0xC3, 0x61], "%C3a"),                           // a lead byte without its continuation
        ([0xC0, 0xAF], "%C0%AF"),                         // an overlong `/`
        ([0xED, 0xA0, 0x80], "%ED%A0%80"),                // a surrogate
        ([0x80, 0xC3, 0xBC, 0xFE], "%80\u{FC}%FE"),        // a stray continuation around a valid ü
        ([0x61, 0x0A, 0x62], "a%0Ab"),                    // a newline: a control character S3 asks to avoid
        ([0x00, 0x6F, 0x7F], "%00o%7F"),                  // NUL (an origin pool's key suffix) and DEL
    ])
    func bytesThatAreNotUTF8AreEscaped(bytes: [UInt8], key: String) throws {
        let escaped = S3TierKey.escaped(bytes)
        #expect(escaped == Array(key.utf8), "\(String(decoding: escaped, as: UTF8.self))")
        #expect(isValidUTF8(escaped))
        #expect(try unescaped(escaped) == bytes)
    }

    /// One object per name: names that would collide if only the invalid bytes were escaped
    /// stay apart, and every name comes back from its key.
    @Test func theMappingIsOneToOne() throws {
        let names: [[UInt8]] = [Array("%FF".utf8), [0xFF], Array("%".utf8), Array("%25".utf8), Array("%2525".utf8),
                                [0x25, 0xFF], [0xFF, 0x25], Array("plain".utf8)]
        let keys = names.map(S3TierKey.escaped)
        #expect(Set(keys).count == names.count, "\(keys.map { String(decoding: $0, as: UTF8.self) })")
        var generator = SeededBytes(seed: 46)
        for _ in 0..<2000 {
            let name = generator.bytes(count: generator.next() % 12)
            let key = S3TierKey.escaped(name)
            #expect(isValidUTF8(key), "\(name)")
            #expect(try unescaped(key) == name, "\(name)")
        }
    }

    @Test func theKeyStartsWithThePrefixAndFitsS3() {
        let prefix = Array("fleet/".utf8)
        #expect(S3TierKey.objectKey(Array("cachefs:1:p/x".utf8), prefix: prefix) == Array("fleet/cachefs:1:p/x".utf8))
        #expect(S3TierKey.objectKey(Array("cachefs:1:p/x".utf8), prefix: []) == Array("cachefs:1:p/x".utf8))
        let longest = Array(repeating: UInt8(ascii: "a"), count: S3TierKey.maxKeyBytes - prefix.count)
        #expect(S3TierKey.objectKey(longest, prefix: prefix)?.count == S3TierKey.maxKeyBytes)
        #expect(S3TierKey.objectKey(longest + [UInt8(ascii: "a")], prefix: prefix) == nil)
        // Escapes count: 341 bytes that are not UTF-8 become 1023.
        #expect(S3TierKey.objectKey(Array(repeating: 0xFF, count: 341), prefix: []) != nil)
        #expect(S3TierKey.objectKey(Array(repeating: 0xFF, count: 342), prefix: []) == nil)
    }

    @Test func theSettingAcceptsS3Locations() throws {
        for text in ["s3://tier-bucket/fleet/", "s3://tier-bucket/fleet", " s3://tier-bucket/fleet/ "] {
            let location = try SharedTierURL.parse(text).get()
            #expect(location == .s3(S3Location(bucket: "tier-bucket", prefix: Array("fleet/".utf8))), "\(text)")
            #expect(location.description == "s3://tier-bucket/fleet/")
        }
        #expect(try SharedTierURL.parse("s3://tier-bucket").get().description == "s3://tier-bucket/")
        for (text, says) in [("s3://ab/", "not an S3 bucket name"), ("s3://key:secret@bucket/", "not an S3 bucket name"),
                             ("s3://bucket/a//b/", "empty path segment")] {
            guard case .failure(let reason) = SharedTierURL.parse(text) else {
                Issue.record("\(text) was accepted")
                continue
            }
            #expect(reason.description.contains(says), "\(text): \(reason)")
        }
    }

    /// AWS's own example of a signed PUT ("Example: PUT Object" of
    /// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html): the
    /// body's SHA-256 is signed as the payload hash.
    @Test func aPutIsSignedWithItsBodysHashAsAWSDocumentsIt() {
        let signer = SignatureV4(credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                             secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
                                 region: "us-east-1")
        let body = Array("Welcome to Amazon S3.".utf8)
        let payloadHash = S3Encoding.hex(SHA256.hash(data: body))
        #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let headers = signer.headers(method: "PUT", host: "examplebucket.s3.amazonaws.com",
                                     encodedPath: "/" + S3Encoding.encode("test$file.text", keepingSlash: true),
                                     headers: [S3Header("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                                               S3Header("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                                     payloadHash: payloadHash, date: Date(timeIntervalSince1970: 1_369_353_600))
        #expect(headers.first { $0.name == "x-amz-content-sha256" }?.value == payloadHash)
        #expect(headers.first { $0.name == "Authorization" }?.value
            == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
            + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }
}

/// A small deterministic generator (xorshift), so a failure names the same bytes again.
private struct SeededBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next() -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(truncatingIfNeeded: state >> 1)
    }
    /// Bytes biased toward `%`, ASCII and UTF-8 lead and continuation bytes.
    mutating func bytes(count: Int) -> [UInt8] {
        let alphabet: [UInt8] = [0x25, 0x41, 0x32, 0x46, 0x80, 0xBF, 0xC3, 0xBC, 0xE6, 0x97, 0xA5, 0xF0, 0x9F, 0xFF, 0xED]
        return (0..<count).map { _ in alphabet[next() % alphabet.count] }
    }
}
