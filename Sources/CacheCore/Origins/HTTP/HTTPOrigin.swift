import CacheModel
import NIOHTTP1

/// `http://HOST/BASE/` and `https://…/`: a name is the base URL with the name's path below the
/// pool appended, each segment percent-encoded. HTTP cannot list, so a pool shows what it has
/// cached. A name whose answer is a redirect to the same URL with a `/` added (what nginx,
/// Apache and Python's http.server do for a directory) is a directory, whatever the
/// redirected request answers (a listing, or 403 where listings are off); other names are files
/// of their `Content-Length`.
///
/// Lookup is a GET of the first ``bytesWithLookup`` bytes (`Range`), not a HEAD: a file that
/// small comes whole with it and is stored at once, so a small file costs the origin one
/// request, not two; a larger one answers 206 with its size in `Content-Range`, and its
/// connection stays open for the next request. A server that ignores `Range` answers 200:
/// then a larger file's body is abandoned after its first part (the connection is closed).
/// Where the GET does not tell the size (an error status, a body cut short, no size) the
/// lookup asks again with a HEAD, so the fetch's retries apply as for any file.
struct HTTPOrigin: Origin {
    /// Ends with `/`.
    let base: String
    let transport: HTTPTransport

    /// Thumbnails and avatars fit; one FUSE read of 128 KiB serves them whole.
    static let bytesWithLookup = Tunables.bytesWithLookup

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        let url = self.url(of: path)
        let started = ContinuousClock.now
        var body: [UInt8] = []
        var firstByteAfter: Duration?
        let response: HTTPTransport.Response
        do {
            response = try transport.get(url, headers: HTTPHeaders([("Range", "bytes=0-\(Self.bytesWithLookup - 1)")])) { part in
                if firstByteAfter == nil { firstByteAfter = ContinuousClock.now - started }
                guard body.count + part.count <= Self.bytesWithLookup else { return false }
                body.append(contentsOf: part)
                return true
            }
        } catch {
            // Cut after its body began: the server is there, and a HEAD tells the size.
            guard firstByteAfter != nil else { throw error }
            return try lookupWithHead(url)
        }
        // Redirected to the name with a `/` added: a directory, whatever the listing answered
        // (nginx without `autoindex` forbids it: 403).
        if response.url == url + "/" { return .directory }
        switch response.status {
        case 200..<300:
            guard let length = Self.size(of: response) else { return try lookupWithHead(url) }
            guard Int64(body.count) == length else { return .file(size: length) }
            let delivery = response.delivery(bytes: length)
            return .fileWithBytes(OriginBytes(bytes: body, delivery: delivery,
                                              firstByteAfter: firstByteAfter ?? ContinuousClock.now - started))
        case 404, 410: return .missing
        default: return try lookupWithHead(url)
        }
    }

    private func lookupWithHead(_ url: String) throws(OriginFailure) -> OriginEntry {
        let response = try transport.head(url)
        if response.url == url + "/" { return .directory }
        switch response.status {
        case 200..<300:
            guard let length = Self.contentLength(response) else {
                throw .failed("HEAD \(url) answered without a Content-Length; cachefs needs a file's size before it is read")
            }
            return .file(size: length)
        case 404, 410: return .missing
        default: throw .failed("HEAD \(url) answered \(response.status)")
        }
    }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        let url = self.url(of: path)
        let response = try transport.get(url, receive: receive)
        switch response.status {
        case 200: return response.delivery(bytes: response.delivered)
        case 404, 410: throw .notFound
        default: throw .failed("GET \(url) answered \(response.status)")
        }
    }

    var fetchesRanges: Bool { true }

    /// A `GET` with `Range` (and `If-Match` once a part is held; see ``RangedAnswer``).
    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart {
        let url = self.url(of: path)
        let (response, answer) = try transport.get(url, headers: HTTPHeaders(RangedAnswer.headers(for: range, sameVersionAs: version)),
                                                   range: range)
        return try answer.outcome(of: response, "GET \(url)")
    }

    /// A conditional `HEAD`: 304 keeps the copy; a 2xx is compared by its `ETag` and
    /// `Last-Modified` (a server that ignores conditions answers 200 to an unchanged file).
    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness {
        let url = self.url(of: path)
        let response = try transport.head(url, headers: HTTPHeaders(version.conditionalHeaders))
        guard let freshness = response.freshness(of: version) else {
            throw .failed("HEAD \(url) answered \(response.status)")
        }
        return freshness
    }

    var sharedVersions: SharedVersions { .askedOfTheOrigin }

    /// A `HEAD`: its `ETag` and `Last-Modified`, and its `Content-Length` as the size.
    func currentVersion(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery? {
        let url = self.url(of: path)
        let response = try transport.head(url)
        switch response.status {
        case 200..<300:
            guard let length = Self.contentLength(response) else { return nil }
            return response.delivery(bytes: length)
        case 404, 410: throw .notFound
        default: throw .failed("HEAD \(url) answered \(response.status)")
        }
    }

    func url(of path: [[UInt8]]) -> String {
        base + path.map { S3Encoding.encode($0) }.joined(separator: "/")
    }

    /// The file's whole size: `Content-Range`'s total under 206, `Content-Length` otherwise.
    private static func size(of response: HTTPTransport.Response) -> Int64? {
        guard response.status == 206 else { return contentLength(response) }
        guard let contentRange = response.headers.first(name: "content-range"), contentRange.hasPrefix("bytes 0-"),
              let total = contentRange.split(separator: "/").last.flatMap({ Int64($0) }), total >= 0 else { return nil }
        return total
    }

    private static func contentLength(_ response: HTTPTransport.Response) -> Int64? {
        response.headers.first(name: "content-length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

}
