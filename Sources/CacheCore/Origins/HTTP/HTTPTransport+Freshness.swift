import CacheModel
import NIOHTTP1

extension HTTPTransport.Response {
    /// The version and caching word of this answer (HTTP or S3), for `bytes` delivered.
    func delivery(bytes: Int64) -> OriginDelivery {
        OriginDelivery(bytes: bytes, etag: headers.first(name: "etag"), lastModified: headers.first(name: "last-modified"),
                       cacheControl: headers.first(name: "cache-control"))
    }

    /// What this answer to a conditional `HEAD` (HTTP or S3) says of `version`: 304, or a 2xx
    /// of the same version (a server that ignores conditions), keeps the copy; 404 or 410 (it
    /// is gone), or another version, does not; nil for any other status.
    func freshness(of version: OriginDelivery) -> OriginFreshness? {
        switch status {
        case 304: return .unchanged
        case 200..<300:
            return version.isSameVersion(etag: headers.first(name: "etag"),
                                         lastModified: headers.first(name: "last-modified"))
                ? .unchanged : .changed
        case 404, 410: return .changed
        default: return nil
        }
    }
}
