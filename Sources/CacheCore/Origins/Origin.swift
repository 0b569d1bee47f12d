import CacheModel

/// What an origin says about a path.
public enum OriginEntry: Sendable, Equatable {
    case file(size: Int64)
    /// A file whose bytes came with the answer to the lookup (a small file over HTTP): stored
    /// at once, with no request of its own.
    case fileWithBytes(OriginBytes)
    case directory
    case missing
}

/// Why an origin could not answer.
public enum OriginFailure: Error, Sendable, Equatable {
    /// The origin does not have the path (ENOENT to the reader; never retried).
    case notFound
    /// The bytes delivered differ from the size announced at lookup (never retried).
    case sizeMismatch(announced: Int64, delivered: Int64)
    /// Anything else: worth retrying.
    case failed(String)
}

extension OriginFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notFound: return "the origin does not have it"
        case .sizeMismatch(let announced, let delivered): return "\(delivered) bytes delivered, \(announced) announced"
        case .failed(let reason): return reason
        }
    }
}

/// A place a read-through pool fetches what it does not hold. Paths are relative to the
/// origin's root, one component per name, as bytes. Both calls block: `lookup` runs on the
/// request thread of a LOOKUP, `fetch` on the fetch's own thread.
public protocol Origin: Sendable {
    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry

    /// Delivers the bytes in order to `receive`; when `receive` answers false nobody wants
    /// them any more and the fetch stops early.
    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery

    /// The names in a directory of the origin, or nil if this kind of origin cannot list.
    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]?
}

extension Origin {
    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]? { nil }
}

/// A whole small file an origin delivered while it was looked up.
public struct OriginBytes: Sendable, Equatable {
    public var bytes: [UInt8]
    public var delivery: OriginDelivery
    /// From the request to its first body byte: the fetch's time to first byte.
    public var firstByteAfter: Duration

    public init(bytes: [UInt8], delivery: OriginDelivery, firstByteAfter: Duration) {
        self.bytes = bytes
        self.delivery = delivery
        self.firstByteAfter = firstByteAfter
    }
}

/// The bytes of an ``OriginBytes`` as an origin of their own, so that storing them takes the
/// path of every fetch (counting, crash safety, finishing the entry).
struct DeliveredBytes: Origin {
    let fetched: OriginBytes

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry { .fileWithBytes(fetched) }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        _ = fetched.bytes.withUnsafeBytes { receive($0) }
        return fetched.delivery
    }
}
