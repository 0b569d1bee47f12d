@testable import CacheCore
import CacheModel
import Foundation
import Testing

@Suite struct S3ResponseTests {
    func names(_ listed: [OriginName]) -> [String] {
        listed.map { ($0.kind == .directory ? "d:" : "f:") + String(decoding: $0.name, as: UTF8.self) }
    }

    @Test func aPageOfListObjectsV2() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>bucket</Name><Prefix>pre/</Prefix><Delimiter>/</Delimiter><KeyCount>4</KeyCount>
              <MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>
              <Contents><Key>pre/</Key><Size>0</Size><ETag>"d41d"</ETag></Contents>
              <Contents><Key>pre/a &amp; b.txt</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified><Size>12345</Size></Contents>
              <Contents><Size>7</Size><Key>pre/ü.bin</Key></Contents>
              <CommonPrefixes><Prefix>pre/sub/</Prefix></CommonPrefixes>
              <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
            </ListBucketResult>
            """
        let page = try ListObjectsV2Page.parse(Data(xml.utf8))
        #expect(page.objects.map(\.key) == ["pre/", "pre/a & b.txt", "pre/ü.bin"])
        #expect(page.objects.map(\.size) == [0, 12345, 7])
        #expect(page.commonPrefixes == ["pre/sub/"])
        #expect(page.isTruncated)
        #expect(page.nextContinuationToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        #expect(names(page.names(under: Array("pre/".utf8))) == ["f:a & b.txt", "f:ü.bin", "d:sub"])
    }

    @Test func theLastPageAndAnEmptyOne() throws {
        let last = try ListObjectsV2Page.parse(Data("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>".utf8))
        #expect(!last.isTruncated && last.nextContinuationToken == nil)
        #expect(names(last.names(under: [])) == ["f:k"])
        let empty = try ListObjectsV2Page.parse(Data("<ListBucketResult><KeyCount>0</KeyCount></ListBucketResult>".utf8))
        #expect(empty == ListObjectsV2Page())
    }

    @Test(arguments: [
        "not xml at all", "<ListBucketResult><Contents><Key>k</Key>", "<Error><Code>NoSuchBucket</Code></Error>",
        "<ListBucketResult><Contents><Key>k</Key><Size>big</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
    ])
    func badListings(xml: String) {
        #expect(throws: S3ResponseError.self) { try ListObjectsV2Page.parse(Data(xml.utf8)) }
    }

    @Test func namesThatCannotBeFileNamesAreLeftOut() {
        let page = ListObjectsV2Page(objects: [], commonPrefixes: ["p/../", "p//", "p/ok/", "other/"])
        #expect(names(page.names(under: Array("p/".utf8))) == ["d:ok"])
    }

    @Test func anErrorDocument() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>
            <Resource>/bucket/missing.txt</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>
            """
        let error = try #require(S3ErrorResponse.parse(Data(xml.utf8)))
        #expect(error.code == "NoSuchKey")
        #expect(error.description == "NoSuchKey: The specified key does not exist. (resource /bucket/missing.txt, request id 4442587FB7D0A2F9)")
        let bare = try #require(S3ErrorResponse.parse(Data("<Error><Code>AccessDenied</Code></Error>".utf8)))
        #expect(bare.description == "AccessDenied")
    }

    @Test(arguments: ["", "<html>502 Bad Gateway</html>", "<Error><Message>no code</Message></Error>", "<Error><Code>x"])
    func notAnErrorDocument(body: String) {
        #expect(S3ErrorResponse.parse(Data(body.utf8)) == nil)
    }
}
