import CacheModel

/// A pool's origin with the pool's shared tier in front of it (docs/shared-tier.md, "Pools
/// with an origin"). For an origin that names no versions (`exec:`), a lookup asks the tier
/// first and a file found there comes with its bytes, so the origin is not asked at all; for
/// one that does (HTTP, S3), a fetch asks the origin which version is current (a `HEAD`),
/// then the tier for that version, and the origin for the bytes only when the tier lacks
/// them. Either way a file the origin delivered is written to the tier once stored
/// (``SharedTier/fileFetched(_:pool:suffix:)``). Everything else is the origin's.
struct SharedTierBeforeOrigin: Origin {
    let origin: any Origin
    let tier: SharedTier
    let pool: EntryID
    let location: SharedTierLocation
    /// The pool's `origin` setting, named in keys.
    let originSetting: String

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        guard origin.sharedVersions == .onePerName,
              let suffix = SharedTierKey.originSuffix(origin: originSetting, version: nil, versions: .onePerName) else {
            return try origin.lookup(path)
        }
        let started = ContinuousClock.now
        guard let content = tier.read(pool: pool, path: path, suffix: suffix, location: location) else {
            return try origin.lookup(path)
        }
        return .fileWithBytes(OriginBytes(bytes: content,
                                          delivery: OriginDelivery(bytes: Int64(content.count), servedBySharedTier: true),
                                          firstByteAfter: ContinuousClock.now - started))
    }

    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        guard origin.sharedVersions == .askedOfTheOrigin, var version = try versionOrNil(path),
              let suffix = SharedTierKey.originSuffix(origin: originSetting, version: version, versions: .askedOfTheOrigin),
              let content = tier.read(pool: pool, path: path, suffix: suffix, location: location) else {
            return try origin.fetch(path, receive: receive)
        }
        // Whole and of the version asked (checked by its digest), so its size is that version's;
        // a size unlike the origin's answer means the origin's answer is not the version's.
        guard Int64(content.count) == version.bytes else { return try origin.fetch(path, receive: receive) }
        _ = content.withUnsafeBytes { receive($0) }
        version.servedBySharedTier = true
        return version
    }

    /// The origin's current version of `path`; nil when the `HEAD` failed (a server that
    /// refuses HEAD, a passing error): the fetch then goes to the origin as without a tier,
    /// since the tier is a shortcut, never a new way for a read to fail. A file the origin no
    /// longer has still fails the fetch (`.notFound`).
    private func versionOrNil(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery? {
        do {
            return try origin.currentVersion(path)
        } catch .notFound {
            throw .notFound
        } catch {
            tier.versionUnknown(pool: pool, because: error)
            return nil
        }
    }

    /// The key suffix a file the origin delivered as `version` is shared under, or nil.
    func suffix(ofDelivered version: OriginDelivery) -> [UInt8]? {
        guard !version.servedBySharedTier else { return nil }
        return SharedTierKey.originSuffix(origin: originSetting, version: version, versions: origin.sharedVersions)
    }

    func list(_ path: [[UInt8]]) throws(OriginFailure) -> [OriginName]? {
        try origin.list(path)
    }

    func revalidate(_ path: [[UInt8]], version: OriginDelivery) throws(OriginFailure) -> OriginFreshness {
        try origin.revalidate(path, version: version)
    }

    var fetchesRanges: Bool { origin.fetchesRanges }

    func fetch(_ path: [[UInt8]], range: Range<Int64>, sameVersionAs version: OriginDelivery?) throws(OriginFailure) -> OriginPart {
        try origin.fetch(path, range: range, sameVersionAs: version)
    }

    var sharedVersions: SharedVersions { origin.sharedVersions }

    func currentVersion(_ path: [[UInt8]]) throws(OriginFailure) -> OriginDelivery? {
        try origin.currentVersion(path)
    }
}
