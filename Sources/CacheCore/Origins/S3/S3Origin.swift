import CacheModel
import Foundation
import NIOHTTP1

/// `s3://BUCKET/PREFIX/`: a name is the object `PREFIX` + its path below the pool, sent
/// path-style to the mount's endpoint and signed with AWS Signature V4. Lookup is a `HEAD`
/// (and, when no such object exists, a one-page ListObjectsV2 that tells whether the name is a
/// "directory" of keys); fetch is a `GET`; listing is ListObjectsV2 with `/` as delimiter.
struct S3Origin: Origin {
    let location: S3Location
    let access: S3Access
    let transport: HTTPTransport

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        let response = try send(.object("HEAD", path, at: location, on: access.resolvedEndpoint)) { _ in true }
        switch response.status {
        case 200..<300:
            guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0 else {
                throw .failed("HEAD \(display(path)) answered without a Content-Length")
            }
            return .file(size: length)
        case 404:
            let page = try listPage(path, continuationToken: nil)
            return page.objects.isEmpty && page.commonPrefixes.isEmpty ? .missing : .directory
        default:
            throw failure(response, "HEAD", path)
        }
    }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        let response = try send(.object("GET", path, at: location, on: access.resolvedEndpoint), receive: receive)
        switch response.status {
        case 200:
            return response.delivery(bytes: response.delivered)
        case 404: throw .notFound
        default: throw failure(response, "GET", path)
        }
    }

    var fetchesRanges: Bool { true }

    /// A ranged `GET`, with `If-Match` once a part is held (see ``RangedAnswer``).
    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart {
        var request = S3Request.object("GET", path, at: location, on: access.resolvedEndpoint)
        request.headers += RangedAnswer.headers(for: range, sameVersionAs: version).map { S3Header($0.0, $0.1) }
        let (response, answer) = try transport.get(request.url, headers: try signedHeaders(request), range: range)
        return try answer.outcome(of: response, "GET \(display(path))")
    }

    /// A `HEAD` with `If-None-Match`: 304 keeps the copy; a 200 is compared by its `ETag`.
    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness {
        var request = S3Request.object("HEAD", path, at: location, on: access.resolvedEndpoint)
        request.headers += version.conditionalHeaders.map { S3Header($0.0, $0.1) }
        let response = try send(request) { _ in true }
        guard let freshness = response.freshness(of: version) else { throw failure(response, "HEAD", path) }
        return freshness
    }

    var sharedVersions: SharedVersions { .askedOfTheOrigin }

    /// A `HEAD`: the object's `ETag`, and its `Content-Length` as the size.
    func currentVersion(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery? {
        let response = try send(.object("HEAD", path, at: location, on: access.resolvedEndpoint)) { _ in true }
        switch response.status {
        case 200..<300:
            guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0 else {
                return nil
            }
            return response.delivery(bytes: length)
        case 404: throw .notFound
        default: throw failure(response, "HEAD", path)
        }
    }

    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]? {
        var names: [OriginName] = []
        var token: String?
        repeat {
            let page = try listPage(path, continuationToken: token)
            names += page.names(under: location.listPrefix(path))
            token = page.isTruncated ? page.nextContinuationToken : nil
        } while token != nil
        return names.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }

    private func listPage(_ path: [[UInt8]], continuationToken: String?) throws(OriginFailure) -> ListObjectsV2Page {
        var body = Data()
        let request = S3Request.list(path, at: location, on: access.resolvedEndpoint, continuationToken: continuationToken)
        let response = try send(request) { chunk in
            body.append(contentsOf: chunk)
            return true
        }
        guard response.status == 200 else { throw failure(response, "listing", path) }
        do {
            return try ListObjectsV2Page.parse(body)
        } catch {
            throw .failed("listing \(display(path)): \(error)")
        }
    }

    private func send(_ request: S3Request, receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> HTTPTransport.Response {
        try send(request) { _, bytes in receive(bytes) }
    }

    private func send(_ request: S3Request,
                      receive: (HTTPTransport.Response, UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> HTTPTransport.Response {
        try transport.send(HTTPMethod(rawValue: request.method), request.url, headers: try signedHeaders(request), receiveWithHead: receive)
    }

    private func signedHeaders(_ request: S3Request) throws(OriginFailure) -> HTTPHeaders {
        let credentials: AWSCredentials
        switch access.credentials {
        case .success(let loaded): credentials = loaded
        case .failure(let reason): throw .failed("no S3 credentials: \(reason)")
        }
        var headers = HTTPHeaders()
        for header in request.signedHeaders(SignatureV4(credentials: credentials, region: access.region)) {
            headers.add(name: header.name, value: header.value)
        }
        return headers
    }

    /// The log line of an answer that is neither success nor "no such key".
    private func failure(_ response: HTTPTransport.Response, _ what: String, _ path: [[UInt8]]) -> OriginFailure {
        let detail = S3ErrorResponse.parse(Data(response.errorBody)).map { " (\($0))" } ?? ""
        if response.status == 403 {
            // Only for the error message: without credentials the message says so by an empty key id.
            let keyID = (try? access.credentials.get().accessKeyID) ?? ""
            return .failed("S3 denied \(what) \(display(path)) (403\(detail)): check credentials "
                + "(access key \(keyID), region \(access.region))")
        }
        return .failed("\(what) \(display(path)) answered \(response.status)\(detail)")
    }

    private func display(_ path: [[UInt8]]) -> String {
        "s3://\(location.bucket)/" + String(decoding: location.key(path), as: UTF8.self)
    }
}
