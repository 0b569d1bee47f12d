import CacheModel

/// What the namespace learns when the kernel serves opens by itself (`kernel_hits`): a
/// reader's close, seen through the kernel's file events instead of an OPEN, and whether the
/// kernel still holds an inode.
extension Names {
    /// A reader closed `id`: its atime moves when it is due (relatime), as an OPEN's would.
    /// Returns the record (nil for an entry gone from memory or not a named file) and
    /// whether the atime moved.
    package func noteReaderClosed(_ id: EntryID, at time: Int64) -> (closed: EntryRecord?, movedAccessTime: Bool) {
        changeInMemory { namespace, _ in
            var movedAccessTime = false
            let closed = namespace.modify(id) { inode -> EntryRecord? in
                guard inode.hasName, inode.record.kind == .file else { return nil }
                if inode.atimeIsDue(at: time) {
                    inode.setAccessTime(time)
                    movedAccessTime = true
                }
                return inode.record
            } ?? nil
            if movedAccessTime, let closed, closed.parent != nil { namespace.log(.content(closed)) }
            return (closed, movedAccessTime)
        }
    }

    /// Whether the kernel holds `id`'s inode (a lookup it has not forgotten).
    package func isHeldByKernel(_ id: EntryID) -> Bool {
        namespace.withLock { ($0.inodes[id]?.lookups ?? 0) > 0 }
    }
}
