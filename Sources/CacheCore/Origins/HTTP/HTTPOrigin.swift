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
        base + path.map(URLPathEncoding.encode).joined(separator: "/")
    }
}

/// Percent-encoding of one path segment (RFC 3986): the unreserved characters stay, every
/// other byte becomes `%XX`, so `/`, `?`, `#`, `%` and non-UTF-8 bytes in a name are data.
public enum URLPathEncoding {
    public static func encode(_ segment: [UInt8]) -> String {
        var encoded = ""
        encoded.reserveCapacity(segment.count)
        for byte in segment {
            if isUnreserved(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
