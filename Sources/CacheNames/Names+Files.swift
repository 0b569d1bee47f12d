import CacheModel
/// What a file's life through its handles changes in the namespace: an open counted, a
/// write marked and finished, a close, durability. Each is one short hold of memory; the
/// index hears of it through the writer.
extension Names {
    /// The file the kernel's inode `id` names, for an OPEN: ESTALE once it is gone (removed
    /// by cachefs: the kernel looks the name up again), while one a user removed still opens
    /// (as on ext4) while the kernel holds it. Its last access is as of now, since an expiry
    /// check follows (see ``recordAsOfNow(_:)``).
    package func fileToOpen(_ id: EntryID) throws -> EntryRecord {
        let pending = access.pendingTime(id)
        let record = try withLoaded([]) { namespace in
            guard let inode = try namespace.inode(id), inode.hasName || inode.keptUntilUnreferenced
            else { throw CacheError.stale }
            return inode.record
        }
        return Self.record(record, readSince: pending)
    }

    /// Counts an open handle (nil when the file went since `fileToOpen`): a removal sees
    /// either a closed file (and discards it) or an open one (and keeps its bytes for this
    /// handle). A read moves atime when it is due (relatime); returns whether it did.
    package func countOpen(_ id: EntryID, writable: Bool, reads: Bool, at time: Int64)
        -> (opened: EntryRecord?, movedAccessTime: Bool)
    {
        changeInMemory { namespace, _ in
            var movedAccessTime = false
            let opened = namespace.modify(id) { inode -> EntryRecord? in
                guard inode.hasName || inode.keptUntilUnreferenced else { return nil }
                inode.openHandles += 1
                if writable { inode.writers += 1 }
                if reads && inode.atimeIsDue(at: time) {
                    inode.setAccessTime(time)
                    movedAccessTime = true
                }
                return inode.record
            } ?? nil
            if movedAccessTime, let opened, opened.parent != nil { namespace.log(.content(opened)) }
            return (opened, movedAccessTime)
        }
    }

    /// Counts a handle's close (RELEASE); the last writer's close finishes the write, and a
    /// nameless file nothing holds any more goes (its bytes and row, as effects). Returns the
    /// file when this close finished its write.
    @discardableResult
    package func countClose(_ id: EntryID, writable: Bool) -> EntryRecord? {
        changeInMemory { namespace, effects in
            // The record is built only for a close that finishes a write: a reader's close is
            // the RELEASE of every hit.
            let closed = namespace.modify(id) { inode -> EntryRecord? in
                inode.openHandles -= 1
                if writable { inode.writers -= 1 }
                // The last writer's close finishes the write (usually its FLUSH did already).
                guard writable && inode.writers == 0 && inode.isWriting else { return nil }
                inode.isWriting = false
                return inode.record
            }
            guard let closed else { return nil }
            var finishedWrite: EntryRecord?
            if let finished = closed, finished.parent != nil {
                namespace.log(.content(finished))
                finishedWrite = finished
            }
            finishIfUnreferenced(id, in: &namespace, effects: &effects)
            return finishedWrite
        }
    }

    /// A FLUSH: the size and times written so far go to the writer; with `finishesWrite`,
    /// the only writer's flush also ends the write. Returns the file when this flush ended it.
    @discardableResult
    package func flushWritten(_ id: EntryID, finishesWrite: Bool) -> EntryRecord? {
        changeInMemory { namespace, _ in
            var ended = false
            let current = namespace.modify(id) { inode -> EntryRecord in
                if finishesWrite && inode.writers <= 1 {
                    ended = inode.isWriting
                    inode.isWriting = false
                }
                return inode.record
            }
            guard let current, current.parent != nil else { return nil }
            namespace.log(.content(current))
            return ended ? current : nil
        }
    }

    /// An fsync's bytes are on the disk: the record says so (the caller waits for the commit).
    package func markDurable(_ id: EntryID) {
        changeInMemory { namespace, _ in
            let current = namespace.modify(id) { inode -> EntryRecord in
                inode.record.durable = true
                return inode.record
            }
            if let current, current.parent != nil { namespace.log(.content(current)) }
        }
    }

    /// Closed files whose bytes the durability worker synced: each still as it was read
    /// (same mtime, not being written) is marked durable, in memory and through the writer in
    /// one hold, so a write that lands meanwhile keeps it not durable on both sides.
    package func markSynced(_ batch: [(id: EntryID, mtime: Int64)]) {
        changeInMemory { namespace, _ in
            var marked: [IndexChange] = []
            for file in batch {
                let inMemory: Void? = namespace.modify(file.id) { inode in
                    guard inode.record.mtime == file.mtime, !inode.isWriting,
                          inode.hasName else { return }
                    inode.record.durable = true
                    marked.append(.content(inode.record))
                }
                // Not in memory: nothing can change it meanwhile, the row is the truth.
                if inMemory == nil { marked.append(.markDurable(file.id, mtime: file.mtime)) }
            }
            namespace.log(marked)
        }
    }

    /// Marks a file as being written; returns whether it was not already (then the caller
    /// waits for the mark to commit before any byte changes).
    package func markWriting(_ id: EntryID) throws -> Bool {
        try withLoaded([]) { namespace -> Bool in
            guard let inode = try namespace.inode(id) else { throw CacheError.notFound }
            guard inode.record.kind == .file, !inode.isWriting else { return false }
            let record = namespace.modify(id) { inode -> EntryRecord in
                inode.record.writing = true
                inode.record.durable = false
                return inode.record
            }!
            if record.parent != nil { namespace.log(.content(record)) }
            return true
        }
    }

    /// Whether a file in memory has no write in progress (its last writer's close finished it).
    package func isFinished(_ id: EntryID) -> Bool {
        namespace.withLock { $0.inodes[id].map { !$0.record.writing } ?? false }
    }

    /// Clears the write mark when no handle writes the file any more.
    /// The file as it is once finished, or nil when it was not (writers left, or removed).
    @discardableResult
    package func finishWriting(_ id: EntryID) -> EntryRecord? {
        changeInMemory { namespace, _ in
            let finished = namespace.modify(id) { inode -> EntryRecord? in
                guard inode.writers == 0, inode.isWriting else { return nil }
                inode.record.writing = false
                return inode.record
            } ?? nil
            guard let finished, finished.parent != nil else { return nil }
            namespace.log(.content(finished))
            return finished
        }
    }

    /// A truncation to zero at OPEN (its bytes already gone): size, blocks and usage follow.
    package func truncatedAtOpen(_ id: EntryID, at time: Int64) throws {
        try withLoaded([]) { namespace in
            let (before, after) = try update(id, in: &namespace) { record in
                record.size = 0
                record.blocks = 0
                record.mtime = time
                record.ctime = time
                record.durable = false
            }
            if after.parent != nil { countResize(after, by: -before.size, in: &namespace) }
        }
    }

    /// A SETATTR's changes of mode, owner, size and times (a truncation's bytes already
    /// changed); a new size moves the pool's usage in the same hold.
    package func setAttributes(_ id: EntryID, _ changes: AttributeChanges) throws -> FileAttributes {
        try withLoaded([]) { namespace in
            let time = now.nanoseconds
            let (before, after) = try update(id, in: &namespace) { updated in
                if let permissions = changes.permissions { updated.mode = permissions & 0o7777 }
                if let uid = changes.uid { updated.uid = uid }
                if let gid = changes.gid { updated.gid = gid }
                if let size = changes.size {
                    updated.size = size
                    updated.mtime = time
                    updated.durable = false
                    // Growing leaves a hole; shrinking frees the blocks past the end.
                    updated.blocks = min(updated.blocks, Tunables.blocks(forSize: size))
                }
                switch changes.accessTime {
                case .now: updated.atime = time
                case .at(let stamp): updated.atime = stamp.nanoseconds
                case nil: break
                }
                switch changes.modificationTime {
                case .now: updated.mtime = time
                case .at(let stamp): updated.mtime = stamp.nanoseconds
                case nil: break
                }
                updated.ctime = time
            }
            if changes.size != nil, after.parent != nil {
                countResize(after, by: after.size - before.size, in: &namespace)
            }
            return after.attributes
        }
    }

    /// A write or fallocate changed a file's bytes: its times, its allocation and (if it grew)
    /// its size move, and the growth is counted in the same hold. Returns whether it grew a
    /// named cached file (the evictor may have to look) and whether it cleared set-id bits.
    package func noteWritten(_ id: EntryID, growingTo end: Int64?, clearingSetID: Bool, blocks: Int64?, at time: Int64)
        -> (countedAsCached: Bool, clearedSetID: Bool)
    {
        changeInMemory { namespace, _ in
            var clearedSetID = false
            // The inode of an open handle is in memory.
            guard let (record, growth) = namespace.modify(id, { inode -> (EntryRecord, Int64) in
                if clearingSetID { clearedSetID = inode.record.clearSetID() }
                if let blocks { inode.record.blocks = blocks }
                inode.record.mtime = time
                inode.record.ctime = time
                inode.record.durable = false
                let growth = max((end ?? 0) - inode.record.size, 0)
                inode.record.size += growth
                return (inode.record, growth)
            }) else { return (false, false) }
            countResize(record, by: growth, in: &namespace)
            if clearedSetID && record.parent != nil { namespace.log(.update(record)) }
            return (growth > 0 && record.parent != nil && !record.persistent, clearedSetID)
        }
    }
}
