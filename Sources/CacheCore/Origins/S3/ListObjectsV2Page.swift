import CacheModel
import Foundation

/// One page of a ListObjectsV2 response (`<ListBucketResult>`).
public struct ListObjectsV2Page: Sendable, Equatable {
    public struct Object: Sendable, Equatable {
        public var key: String
        public var size: Int64
    }

    public var objects: [Object] = []
    /// The `Prefix` of each `CommonPrefixes`: the subdirectories, each ending with the delimiter.
    public var commonPrefixes: [String] = []
    public var isTruncated = false
    /// Set when `isTruncated`: the `continuation-token` of the next page.
    public var nextContinuationToken: String?

    public static func parse(_ data: Data) throws(S3ResponseError) -> ListObjectsV2Page {
        guard let ends = XMLElementEnds.parse(data) else { throw S3ResponseError("the listing is not well-formed XML") }
        guard ends.last?.path == ["ListBucketResult"] else {
            throw S3ResponseError("the listing is not a <ListBucketResult>")
        }
        var page = ListObjectsV2Page()
        var key: String?
        var size: Int64?
        for end in ends {
            switch end.path.dropFirst() {
            case ["Contents", "Key"]: key = end.text
            case ["Contents", "Size"]:
                guard let value = Int64(end.text), value >= 0 else {
                    throw S3ResponseError("the listing has a size that is not a number: \(end.text)")
                }
                size = value
            case ["Contents"]:
                guard let objectKey = key, let objectSize = size else {
                    throw S3ResponseError("the listing has a <Contents> without <Key> or <Size>")
                }
                page.objects.append(Object(key: objectKey, size: objectSize))
                key = nil
                size = nil
            case ["CommonPrefixes", "Prefix"]: page.commonPrefixes.append(end.text)
            case ["IsTruncated"]: page.isTruncated = end.text == "true"
            case ["NextContinuationToken"]: page.nextContinuationToken = end.text
            default: break
            }
        }
        if page.isTruncated && page.nextContinuationToken == nil {
            throw S3ResponseError("the listing is truncated but has no <NextContinuationToken>")
        }
        return page
    }

    /// The names directly under `prefix` (the `prefix` the page was asked for): objects as
    /// files, common prefixes as directories. The key equal to `prefix` itself (a "folder"
    /// marker some tools create) and names that cannot be a file name are left out.
    public func names(under prefix: [UInt8]) -> [OriginName] {
        func relative(_ text: String, trimmingSlash: Bool) -> [UInt8]? {
            let bytes = Array(text.utf8)
            guard bytes.starts(with: prefix) else { return nil }
            var name = Array(bytes.dropFirst(prefix.count))
            if trimmingSlash, name.last == UInt8(ascii: "/") { name.removeLast() }
            guard !name.isEmpty, name != Array(".".utf8), name != Array("..".utf8),
                  !name.contains(UInt8(ascii: "/")), !name.contains(0) else { return nil }
            return name
        }
        return objects.compactMap { relative($0.key, trimmingSlash: false) }.map { OriginName(name: $0, kind: .file) }
            + commonPrefixes.compactMap { relative($0, trimmingSlash: true) }.map { OriginName(name: $0, kind: .directory) }
    }
}

/// A response S3 sent that cachefs cannot read.
public struct S3ResponseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
