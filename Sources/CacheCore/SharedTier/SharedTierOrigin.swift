import CacheModel

/// The shared tier seen as a pool's origin: a name the pool lacks is the tier's file, whose
/// bytes arrive with the lookup and are stored at once (as a small HTTP file's are), or
/// missing. A pool with a tier and no origin reads through it; it lists nothing and its
/// files never change (a file written again is a new value for the next machine's miss).
struct SharedTierOrigin: Origin {
    let tier: SharedTier
    let pool: EntryID
    let location: SharedTierLocation

    func lookup(_ path: [[UInt8]]) throws(OriginFailure) -> OriginEntry {
        let started = ContinuousClock.now
        guard let content = tier.read(pool: pool, path: path, location: location) else { return .missing }
        return .fileWithBytes(OriginBytes(bytes: content, delivery: OriginDelivery(bytes: Int64(content.count)),
                                          firstByteAfter: ContinuousClock.now - started))
    }

    /// Only for a file its pool does not keep (`admit_*`), fetched again at its open.
    func fetch(_ path: [[UInt8]], receive: (UnsafeRawBufferPointer) -> Bool) throws(OriginFailure) -> OriginDelivery {
        guard let content = tier.read(pool: pool, path: path, location: location) else { throw .notFound }
        _ = content.withUnsafeBytes { receive($0) }
        return OriginDelivery(bytes: Int64(content.count))
    }
}
