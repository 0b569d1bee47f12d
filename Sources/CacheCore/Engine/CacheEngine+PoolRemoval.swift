import Foundation

/// Removing a pool is an explicit act (`user.cache.remove_pool` = NAME on the root, which
/// `cachefs remove-pool` writes): `rmdir` of a pool answers EBUSY, so `rm -rf MOUNT/*` empties
/// the pools but keeps them and their policies.
extension CacheEngine {
    /// Removes the empty pool `name` and its policy; ENOTEMPTY while it holds anything,
    /// ENOENT when there is no such pool. Returns once the removal is committed.
    func removePool(on id: EntryID, named text: String) throws {
        guard id == WellKnownEntry.root else {
            throw CacheError.unknownCacheAttribute(CacheAttribute.removePool.fullName)
        }
        let name = Data(text.utf8)
        let removed = try namespace.withLock { namespace -> EntryRecord in
            guard let pool = try namespace.child(of: WellKnownEntry.root, named: name), pool.isPool else {
                throw CacheError.notFound
            }
            guard try !namespace.hasChildren(pool.entryID) else { throw CacheError.notEmpty }
            let time = now.nanoseconds
            namespace.removeName(LinkName(parent: WellKnownEntry.root, name: pool.name), of: pool.entryID, at: time)
            namespace.log(.delete(pool.entryID))
            policies.withLock { $0[pool.entryID] = nil }
            evictor.replacement.removePool(pool.entryID)
            usage.removePool(pool.entryID)
            touch(WellKnownEntry.root, at: time, in: &namespace, subdirectories: -1)
            return pool
        }
        writer.flush()
        logger.info("removed pool \(text) and its policy")
        notifications.enqueue([
            PendingNotification.deleted(parent: WellKnownEntry.root, child: removed.entryID, name: Array(removed.name)),
        ])
    }
}
