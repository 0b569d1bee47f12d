import CacheModel
/// `persistent`, `pinned` and `expiration` on an entry, or on a directory and everything
/// beneath it: changed in memory in one hold, each file's usage moving in the hold that
/// changes its flag, so a write growing it meanwhile is never lost.
extension Names {
    /// Applies `change` to the entry `id`; on a directory, copies `attribute` (only it:
    /// pinning a directory leaves a file's own persistence alone) to everything beneath,
    /// now, as creation does later. `changed` hears each file whose flags changed, inside
    /// the hold (leaf locks only), so its handles' write limits follow at once. The
    /// directory's subtree must be loaded (``loadSubtreeOutsideTheLock(_:)``).
    package func setFlag(_ attribute: CacheAttribute, on id: EntryID, at time: Timestamp,
                         _ change: (inout EntryRecord) -> Void, changed: (EntryRecord) -> Void) throws {
        try withLoaded([]) { namespace in
            let current = try namespace.record(id)
            guard current.parent != nil else { throw CacheError.notFound }
            if current.kind == .directory {
                var directory = current
                change(&directory)
                directory.ctime = time.nanoseconds
                try copyDown(attribute, from: directory, at: time.nanoseconds, in: &namespace, changed: changed)
                return
            }
            let (before, after) = try update(id, in: &namespace) { updated in
                change(&updated)
                updated.ctime = time.nanoseconds
            }
            if before.persistent != after.persistent { changed(after) }
            if after.lastAccess != before.lastAccess { access.touch(after.entryID, at: after.lastAccess) }
        }
    }

    /// The ctime of an entry moves (a change of its extended attributes).
    package func touchChangeTime(_ id: EntryID) throws {
        let time = now.nanoseconds
        try withLoaded([]) { namespace in
            _ = try update(id, in: &namespace) { $0.ctime = time }
        }
    }

    private func copyDown(_ attribute: CacheAttribute, from directory: EntryRecord, at time: Int64,
                          in namespace: inout NamespaceState, changed: (EntryRecord) -> Void) throws {
        let beneath = try namespace.subtree(of: directory.entryID)
        var changes: [IndexChange] = []
        for id in [directory.entryID] + beneath.map(\.entryID) {
            // A file still being fetched takes the directory's persistence when it completes.
            if attribute == .persistent && fetches.isUnfinished(id) { continue }
            let change = namespace.modify(id) { inode -> (before: EntryRecord, after: EntryRecord) in
                let before = inode.record
                let leavesPersistence = before.persistent && !directory.persistent
                switch attribute {
                case .persistent: inode.record.persistent = directory.persistent
                case .pinned: inode.record.pinnedUntil = directory.pinnedUntil
                case .expiration: inode.record.expiration = directory.expiration
                default: break
                }
                if id == directory.entryID { inode.record.ctime = directory.ctime }
                if leavesPersistence && before.kind == .file {
                    // Back in the pool, a file counts as most recently used.
                    inode.record.lastAccess = time
                    access.touch(id, at: time)
                }
                return (before, inode.record)
            }
            guard let (before, after) = change else { continue }
            moveUsageIfPersistenceChanged(from: before, to: after, in: &namespace)
            changes.append(.update(after))
            if after.kind == .file { changed(after) }
        }
        namespace.log(changes)
    }
}
