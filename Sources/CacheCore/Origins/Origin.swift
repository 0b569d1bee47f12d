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
    /// The origin's file is no longer the version the parts held came from (a ranged
    /// request's `If-Match` failed, or the answer named another version): never retried.
    case changed
    /// Anything else: worth retrying.
    case failed(String)
}

extension OriginFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notFound: return "the origin does not have it"
        case .sizeMismatch(let announced, let delivered): return "\(delivered) bytes delivered, \(announced) announced"
        case .changed: return "the origin's file changed since its first part was fetched"
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

    /// Whether the origin's file at `path` is still the `version` a fetch delivered: one
    /// conditional request (or a `stat`). Throws when the origin cannot be asked.
    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness

    /// Whether ``fetch(_:range:sameVersionAs:)`` asks for part of a file; an origin that
    /// cannot (an `exec:` program) has its files fetched whole.
    var fetchesRanges: Bool { get }

    /// The bytes `range` of the file (fewer if the file ends sooner), gathered in memory (a
    /// block is stored whole, never in parts), and which version they are. Given the
    /// `version` earlier parts came from, an origin that can make the request conditional
    /// does, and throws `.changed` when the file is another version now.
    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart

    /// How the pool's shared tier tells this origin's versions apart.
    var sharedVersions: SharedVersions { get }

    /// The version of the file at `path` now, with its size in `bytes`, asked without its
    /// bytes (a `HEAD`); nil when the origin cannot tell. Throws `.notFound` for no file.
    func currentVersion(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery?
}

/// How a pool's shared tier tells one version of an origin's file from another
/// (docs/shared-tier.md, "Pools with an origin").
public enum SharedVersions: Sendable, Equatable {
    /// The origin cannot tell versions (an `exec:` program): a name is one file, and the
    /// tier is asked before the origin, at the lookup.
    case onePerName
    /// The origin names versions (an ETag or a date): the origin is asked for the current
    /// one (``Origin/currentVersion(_:)``) and the tier for that version, at the fetch.
    case askedOfTheOrigin
    /// Not shared: the origin is as near as the tier (a `file:` directory).
    case notShared
}

/// Part of an origin's file: its bytes and the version they are.
public struct OriginPart: Sendable {
    public var bytes: BlockBuffer
    public var delivery: OriginDelivery
}

/// What an origin answers when asked whether a fetched file changed.
public enum OriginFreshness: Sendable, Equatable {
    case unchanged
    /// Another version, or gone: the copy must not be served again.
    case changed
    /// This kind of origin cannot tell (an `exec:` program): the copy is kept.
    case unknown
}

extension Origin {
    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]? { nil }

    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness { .unknown }

    var fetchesRanges: Bool { false }

    var sharedVersions: SharedVersions { .notShared }

    func currentVersion(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery? { nil }

    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart {
        throw .failed("this origin fetches whole files only")
    }
}

extension OriginDelivery {
    /// Whether an answer's `ETag` and `Last-Modified` show the same version as this one: the
    /// ETags equal where both have one (a weak one compares as a strong one: the copy is whole
    /// either way), else the dates equal where both have one; without either, not the same.
    func isSameVersion(etag: String?, lastModified: String?) -> Bool {
        if let stored = self.etag, let etag { return Self.opaque(stored) == Self.opaque(etag) }
        if let stored = self.lastModified, let lastModified { return stored == lastModified }
        return false
    }

    /// Whether `other` names a version other than this one: their ETags differ where both
    /// have one, else their dates where both have one. Without either, nothing tells.
    func isOtherVersion(than other: OriginDelivery) -> Bool {
        if let etag, let otherETag = other.etag { return Self.opaque(etag) != Self.opaque(otherETag) }
        if let lastModified, let otherDate = other.lastModified { return lastModified != otherDate }
        return false
    }

    /// The headers that make a ranged request fail (412) unless the file is still this
    /// version: `If-Match` where there is an `ETag`, else `If-Unmodified-Since`.
    var matchHeaders: [(String, String)] {
        // A weak ETag never matches `If-Match` (a strong comparison): the answer's own ETag
        // is compared instead (``isOtherVersion(than:)``).
        if let etag { return etag.hasPrefix("W/") ? [] : [("If-Match", etag)] }
        if let lastModified { return [("If-Unmodified-Since", lastModified)] }
        return []
    }

    private static func opaque(_ etag: String) -> Substring {
        etag.hasPrefix("W/") ? etag.dropFirst(2) : Substring(etag)
    }

    /// The conditional header that asks whether this version is still current: `If-None-Match`
    /// where there is an `ETag`, else `If-Modified-Since`. Not both: a server may answer 304 to
    /// a date within the same second as the kept one whatever the ETag (RFC 9110 has the ETag
    /// win, not every server does).
    var conditionalHeaders: [(String, String)] {
        if let etag { return [("If-None-Match", etag)] }
        if let lastModified { return [("If-Modified-Since", lastModified)] }
        return []
    }
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
