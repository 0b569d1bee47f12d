/// Bytes and file counts of one pool.
public struct PoolUsage: Sendable, Equatable {
    public var cachedBytes: Int64 = 0
    public var cachedFiles: Int64 = 0
    public var persistentBytes: Int64 = 0
    public var persistentFiles: Int64 = 0

    public init() {}
}
