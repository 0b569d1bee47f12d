import CacheModel
import Crypto
import Foundation
import NIOCore

/// An S3 bucket as a shared tier (`s3://BUCKET/PREFIX/`): a value is the object PREFIX + the
/// tier key (``S3TierKey``), read with one signed GET and written with one signed PUT whose
/// body's SHA-256 is signed too. It goes through the origins' HTTP client, to their endpoint,
/// signed with their keys for their region (``S3Access``: `-o s3_endpoint`, the AWS
/// environment or credentials file). A request ends by its deadline, whatever it waits for
/// (connect, send, the whole body). No such key is nil; any other answer throws.
struct S3TierBackend: SharedTierBackend {
    let location: S3Location
    let access: S3Access
    let transport: HTTPTransport

    /// The largest object read whole: a value of the largest file a tier shares. Anything
    /// larger under a tier key was not written by cachefs, and is not held in memory.
    static let maxValueBytes = Int(Tunables.sharedMaxFileSizeLimit) + SharedTierValue.headerSize

    func value(at key: [UInt8], deadline: NIODeadline) throws -> [UInt8]? {
        // A key S3 cannot hold is never written: not there.
        guard let objectKey = S3TierKey.objectKey(key, prefix: location.prefix) else { return nil }
        let request = objectRequest("GET", objectKey)
        var body: [UInt8] = []
        var tooLarge = false
        let response = try transport.send(.GET, request.url, headers: try access.signedHeaders(request),
                                          deadline: deadline) { chunk in
            guard body.count + chunk.count <= Self.maxValueBytes else {
                tooLarge = true
                return false
            }
            body.append(contentsOf: chunk)
            return true
        }
        switch response.status {
        case 200:
            guard !tooLarge else {
                throw S3TierFailure("GET \(display(objectKey)) is larger than \(Self.maxValueBytes) bytes: not a cachefs value")
            }
            return body
        case 404 where S3ErrorResponse.parse(Data(response.errorBody))?.code != "NoSuchBucket":
            return nil
        default:
            throw failure(response, "GET", objectKey)
        }
    }

    func store(_ value: [UInt8], at key: [UInt8], deadline: NIODeadline) throws {
        guard let objectKey = S3TierKey.objectKey(key, prefix: location.prefix) else {
            throw S3TierFailure("the object key of \(String(decoding: key, as: UTF8.self)) would be longer than S3's "
                                + "\(S3TierKey.maxKeyBytes) bytes: not shared")
        }
        let request = objectRequest("PUT", objectKey)
        let headers = try access.signedHeaders(request, payloadHash: S3Encoding.hex(SHA256.hash(data: value)))
        let response = try transport.send(.PUT, request.url, headers: headers, body: value, deadline: deadline) { _ in true }
        guard (200..<300).contains(response.status) else { throw failure(response, "PUT", objectKey) }
    }

    /// The HTTP client is the origins': it is shut down with them.
    func close() {}

    /// Path-style, as the origins' requests (``S3Request``).
    private func objectRequest(_ method: String, _ objectKey: [UInt8]) -> S3Request {
        S3Request(method: method, endpoint: access.resolvedEndpoint,
                  encodedPath: "/" + S3Encoding.encode(location.bucket) + "/" + S3Encoding.encode(objectKey, keepingSlash: true),
                  query: [], headers: [])
    }

    private func failure(_ response: HTTPTransport.Response, _ what: String, _ objectKey: [UInt8]) -> S3TierFailure {
        let detail = S3ErrorResponse.parse(Data(response.errorBody)).map { " (\($0))" } ?? ""
        if response.status == 403 {
            return S3TierFailure("S3 denied \(what) \(display(objectKey)) (403\(detail)): \(access.checkCredentialsHint)")
        }
        return S3TierFailure("\(what) \(display(objectKey)) answered \(response.status)\(detail)")
    }

    private func display(_ objectKey: [UInt8]) -> String {
        "s3://\(location.bucket)/" + String(decoding: objectKey, as: UTF8.self)
    }
}

struct S3TierFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
