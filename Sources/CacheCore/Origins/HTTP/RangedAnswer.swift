import CacheModel
import NIOHTTP1

/// The body of an answer to a ranged `GET` (HTTP or S3), cut to the bytes asked for and
/// gathered in memory: 206 delivers them as they come, after a check that `Content-Range`
/// starts where asked; 200 (a server that ignores `Range`) delivers the whole file, so its
/// bytes before the range are skipped and the body is abandoned at the range's end. Slower,
/// never wrong.
struct RangedAnswer: Sendable {
    let range: Range<Int64>
    /// Bytes of the body seen so far (under 200, from the file's start).
    private var position: Int64 = 0
    let body: BlockBuffer
    private(set) var badContentRange: String?

    init(range: Range<Int64>) {
        self.range = range
        body = BlockBuffer(capacity: Int(range.upperBound - range.lowerBound))
    }

    /// The request's headers: `Range`, and the conditions that fail it (412) when the file is
    /// no longer `version`.
    static func headers(for range: Range<Int64>, sameVersionAs version: OriginDelivery?) -> [(String, String)] {
        [("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")] + (version?.matchHeaders ?? [])
    }

    /// Keeps the part of `bytes` inside the range; false once the rest of the body is not
    /// wanted. Under 206 that is only a `Content-Range` that starts elsewhere: the body is read
    /// to its end (bytes past the range, which a server should not send, are dropped), so its
    /// connection can serve the next request. Under 200 it is the range's end.
    mutating func take(_ bytes: UnsafeRawBufferPointer, status: Int, headers: HTTPHeaders) -> Bool {
        if position == 0, body.count == 0, status == 206 {
            let contentRange = headers.first(name: "content-range") ?? ""
            guard contentRange.hasPrefix("bytes \(range.lowerBound)-") else {
                badContentRange = contentRange
                return false
            }
            position = range.lowerBound
        }
        let start = max(range.lowerBound - position, 0)
        let end = min(range.upperBound - position, Int64(bytes.count))
        position += Int64(bytes.count)
        if start < end { body.append(UnsafeRawBufferPointer(rebasing: bytes[Int(start)..<Int(end)])) }
        return status == 206 || position < range.upperBound
    }

    /// What the answer means once it ended: the bytes and the version they are, or why it failed.
    func outcome(of response: HTTPTransport.Response, _ what: String) throws(OriginFailure) -> OriginPart {
        if let badContentRange {
            throw .failed("\(what) answered 206 with Content-Range \"\(badContentRange)\" for bytes \(range.lowerBound)-\(range.upperBound - 1)")
        }
        switch response.status {
        case 200, 206:
            return OriginPart(bytes: body, delivery: response.delivery(bytes: Int64(body.count)))
        case 404, 410, 412, 416: throw .changed
        default: throw .failed("\(what) answered \(response.status)")
        }
    }
}
