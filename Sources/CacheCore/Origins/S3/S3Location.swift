/// Where a pool's objects live: the bucket and key prefix of an `s3://BUCKET/PREFIX/` origin.
public struct S3Location: Sendable, Hashable {
    public var bucket: String
    /// Empty, or ends with `/`: `s3://b/photos` and `s3://b/photos/` both mean `photos/`.
    public var prefix: [UInt8]

    /// The prefix is taken as written (not percent-decoded), as the AWS CLI reads `s3://` URLs.
    public static func parse(_ url: String) -> Result<S3Location, OriginURLError> {
        guard url.hasPrefix("s3://") else { return .failure(.init("expected s3://BUCKET/PREFIX/")) }
        let rest = url.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        guard isValidBucketName(bucket) else {
            return .failure(.init("\"\(bucket)\" is not an S3 bucket name (3 to 63 letters, digits, dots, hyphens)"))
        }
        var prefix = Array(rest.dropFirst(bucket.count).drop { $0 == "/" }.utf8)
        if prefix.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            return .failure(.init("an s3:// origin has no query or fragment: s3://BUCKET/PREFIX/"))
        }
        if !prefix.isEmpty && prefix.last != UInt8(ascii: "/") { prefix.append(UInt8(ascii: "/")) }
        if prefix.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropLast().contains(where: \.isEmpty) {
            return .failure(.init("the prefix of an s3:// origin has an empty path segment (//)"))
        }
        return .success(S3Location(bucket: bucket, prefix: prefix))
    }

    /// The key of a name: the prefix, then the path's components joined by `/`.
    public func key(_ path: [[UInt8]]) -> [UInt8] {
        prefix + Array(path.joined(separator: [UInt8(ascii: "/")]))
    }

    /// The `prefix` a ListObjectsV2 of a directory asks for: its key and a `/` (the bare
    /// prefix for the origin's root).
    public func listPrefix(_ directory: [[UInt8]]) -> [UInt8] {
        directory.isEmpty ? prefix : key(directory) + [UInt8(ascii: "/")]
    }

    /// Lower-case letters, digits, `.` and `-`, 3 to 63 long; upper case and `_` are also
    /// accepted for buckets made under the old us-east-1 rules.
    static func isValidBucketName(_ name: String) -> Bool {
        (3...63).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }
    }
}
