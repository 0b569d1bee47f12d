import NIOHTTP1

/// `http://HOST/BASE/` and `https://…/`: a name is the base URL with the name's path below the
/// pool appended, each segment percent-encoded. Lookup is a HEAD, fetch a GET; HTTP cannot
/// list, so a pool shows what it has cached. A name whose HEAD is redirected to the same URL
/// with a `/` added (what nginx, Apache and Python's http.server do for a directory) is a
/// directory; other names are files of their `Content-Length`.
struct HTTPOrigin: Origin {
    /// Ends with `/`.
    let base: String
    let transport: HTTPTransport

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        let url = self.url(of: path)
        let response = try transport.head(url)
        switch response.status {
        case 200..<300:
            if response.url == url + "/" { return .directory }
            guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0 else {
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
        case 200:
            return OriginDelivery(bytes: response.delivered, etag: response.headers.first(name: "etag"),
                                  lastModified: response.headers.first(name: "last-modified"))
        case 404, 410: throw .notFound
        default: throw .failed("GET \(url) answered \(response.status)")
        }
    }

    func url(of path: [[UInt8]]) -> String {
        base + path.map { S3Encoding.encode($0) }.joined(separator: "/")
    }
}
