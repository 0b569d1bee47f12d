/// What a fetch delivered: how many bytes, and which version of the origin's file they are
/// (HTTP's `ETag` and `Last-Modified`; nil where the origin has no such thing), and what the
/// origin said of caching it (HTTP's `Cache-Control`, honoured where the pool's
/// `cache_control` asks).
public struct OriginDelivery: Sendable, Equatable {
    public var bytes: Int64
    public var etag: String?
    public var lastModified: String?
    public var cacheControl: String?
    /// The bytes came from the pool's shared tier, not from the origin (never stored: only
    /// the fetch that delivered them reads it, so that they are not written back).
    public var servedBySharedTier = false

    public init(bytes: Int64, etag: String? = nil, lastModified: String? = nil, cacheControl: String? = nil,
                servedBySharedTier: Bool = false) {
        self.bytes = bytes
        self.etag = etag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.servedBySharedTier = servedBySharedTier
    }
}

/// A name an origin listed.
public struct OriginName: Sendable, Equatable {
    public var name: [UInt8]
    public var kind: EntryKind

    package init(name: [UInt8], kind: EntryKind) {
        self.name = name
        self.kind = kind
    }
}
