/// `df` inside a pool describes the pool: its budget as the size, what is left of it as
/// available. The root, and a pool without a byte limit, describe the store's filesystem.
extension CacheEngine {
    /// The corresponding FUSE operation is `STATFS`, for the entry `id` the path names.
    public func statfs(of id: EntryID) throws -> FilesystemStats {
        let disk = try statfs()
        let pool = try record(id).pool
        guard pool != 0, let policy = policies.withLock({ $0[pool] }), policy.maxSize > 0 else { return disk }
        let unit = max(disk.fragmentSize, 1)
        let used = usage.usage(of: pool)
        // A pool cannot hold more than its filesystem has free, whatever its budget says.
        let leftUnderLimit = UInt64(max(policy.maxSize - used.cachedBytes, 0)) / unit
        var stats = disk
        stats.blocks = UInt64(policy.maxSize) / unit
        stats.freeBlocks = min(leftUnderLimit, disk.freeBlocks)
        stats.availableBlocks = min(leftUnderLimit, disk.availableBlocks)
        if policy.maxFiles > 0 {
            let files = UInt64(max(used.cachedFiles, 0))
            stats.files = UInt64(policy.maxFiles)
            stats.freeFiles = min(UInt64(policy.maxFiles) - min(files, UInt64(policy.maxFiles)), disk.freeFiles)
        }
        return stats
    }
}
