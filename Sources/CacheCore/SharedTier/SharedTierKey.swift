import CacheModel
import Crypto
import Foundation

/// The tier's key of a file: `cachefs:1:POOL/DIR/NAME`, the names' own bytes (Redis keys are
/// binary safe: spaces, newlines, bytes that are not UTF-8 stay as they are). No name holds a
/// `/`, so two files never share a key. Machines share the files of pools of the same name;
/// the `1` is the value format's version, so a later format never reads an older value.
///
/// A file of a pool with an origin has a suffix (``originSuffix(origin:version:)``) naming the
/// origin and the version the file is: no name holds a NUL either, so the suffix, which
/// begins with one, never makes one file's key another's.
enum SharedTierKey {
    static let prefix: [UInt8] = Array("cachefs:1:".utf8)

    static func key(pool: [UInt8], path: [[UInt8]], suffix: [UInt8] = []) -> [UInt8] {
        var key = prefix + pool
        for component in path {
            key.append(UInt8(ascii: "/"))
            key.append(contentsOf: component)
        }
        return key + suffix
    }

    /// `\0origin=HASH` (the first 8 bytes of the SHA-256 of the pool's `origin` setting, in
    /// hex: two origins never share a key), then `\0etag=ETAG` or, without an ETag,
    /// `\0modified=DATE`, for an origin that names versions. Nil when it names none for this
    /// file although it could (`version` without either): such a file is not shared, since
    /// two machines could hold two versions under one key.
    static func originSuffix(origin: String, version: OriginDelivery?, versions: SharedVersions) -> [UInt8]? {
        let digest = SHA256.hash(data: Data(origin.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        var suffix: [UInt8] = [0] + Array("origin=\(digest)".utf8)
        switch versions {
        case .notShared:
            return nil
        case .onePerName:
            return suffix
        case .askedOfTheOrigin:
            if let etag = version?.etag {
                // A weak ETag (`W/"…"`) names the same version as its strong form.
                suffix += [0] + Array("etag=".utf8) + Array((etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag).utf8)
            } else if let date = version?.lastModified {
                suffix += [0] + Array("modified=\(date)".utf8)
            } else {
                return nil
            }
            return suffix
        }
    }
}
