import Foundation

/// How a name leaves: one name at a user's request (unlink, a rename over it), or every
/// name of an entry at once (cachefs's own removals work on inodes). The entry itself goes
/// with its last name; its bytes when nothing needs them any more.
extension CacheEngine {
    /// A user's removal of one name. When it was the last, a file's size leaves its pool and
    /// its bytes stay while a handle is open or the kernel still holds the inode (so an
    /// open(2) racing the removal opens the old file, as on ext4, instead of failing; the
    /// kernel forgets such an inode as soon as it sees the removal). Returns the id whose
    /// bytes and row can go now.
    func removeUserName(_ name: LinkName, of id: EntryID, at time: Int64,
                        in namespace: inout NamespaceState) -> EntryID? {
        guard let inode = namespace.inodes[id], inode.names.count == 1 else {
            namespace.removeName(name, of: id, at: time)
            return nil
        }
        let discard = retireLastName(of: id, keepWhileKernelHolds: true, at: time, in: &namespace)
        namespace.removeName(name, of: id, at: time)
        return discard
    }

    /// Takes every name of an entry away (eviction, expiry, pressure, clear, refusal).
    /// The kernel is told of each name; its bytes go at once unless a handle is open.
    /// Returns the names it had and the id whose bytes and row can go now.
    func removeEveryName(of id: EntryID, at time: Int64,
                         in namespace: inout NamespaceState) throws -> (names: [LinkName], discard: EntryID?) {
        guard namespace.inodes[id] != nil else { return ([], nil) }
        let discard = retireLastName(of: id, keepWhileKernelHolds: false, at: time, in: &namespace)
        let names = try namespace.removeAllNames(of: id, at: time)
        return (names, discard)
    }

    /// What the last name leaving changes, logged before the name goes: the size leaves the
    /// pool's usage (into pending while the bytes are kept) and the row becomes nameless. A
    /// file of an origin pool whose fetch never started was never counted (`countsInUsage`).
    private func retireLastName(of id: EntryID, keepWhileKernelHolds: Bool, at time: Int64,
                                in namespace: inout NamespaceState) -> EntryID? {
        // The size is read in the same hold that takes the name, so a write counts its
        // growth either before (here subtracted) or after (as pending).
        let kept = namespace.modify(id) { inode -> Bool in
            let kept = inode.openHandles > 0 || (keepWhileKernelHolds && inode.lookups > 0)
            if inode.record.kind == .file && countsInUsage(inode.record) {
                usage.addFile(-1, bytes: -inode.record.size, pool: inode.record.pool,
                              persistent: inode.record.persistent)
                if !inode.record.persistent { evictor.replacement.removed(id, pool: inode.record.pool) }
                if kept { usage.addPending(inode.record.size, pool: inode.record.pool) }
            }
            if !kept { fetches.dropIfPending(id) }
            inode.keptUntilUnreferenced = kept
            return kept
        } ?? false
        namespace.log(.detach(id, ctime: time))
        return kept ? nil : id
    }

    /// A nameless entry whose last handle closed or which the kernel forgot: when nothing
    /// needs it any more it leaves memory, and the id returned has bytes and a row to go.
    func finishIfUnreferenced(_ id: EntryID, in namespace: inout NamespaceState) -> EntryID? {
        guard let inode = namespace.inodes[id], inode.record.parent == nil, !inode.isReferenced else { return nil }
        namespace.dropIfUnreferenced(id)
        guard inode.keptUntilUnreferenced else { return nil }
        if inode.record.kind == .file && countsInUsage(inode.record) {
            usage.addPending(-inode.record.size, pool: inode.record.pool)
        }
        fetches.dropIfPending(id)
        return id
    }

    /// The path of one name below the mount ("data/photos/a.jpg"), for events.
    func path(of name: LinkName, in namespace: inout NamespaceState) -> String {
        // Only names the file in an event; the name alone stands when its directory cannot be read.
        guard let directory = try? namespace.record(name.parent) else { return String(decoding: name.name, as: UTF8.self) }
        let directoryPath = path(of: directory, in: &namespace)
        return directoryPath + "/" + String(decoding: name.name, as: UTF8.self)
    }

    /// Records a user's removal of a file (its last name) as a `deleted` event.
    func recordDeletion(of record: EntryRecord, path: String, reason: String, at time: Timestamp) {
        guard record.kind == .file else { return }
        let pool = poolNames()[record.pool] ?? ""
        events.record([CacheEvent(time: time, event: .deleted, pool: pool, path: path, size: record.size,
                                  reason: reason)])
    }
}
