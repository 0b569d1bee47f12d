import Glibc

/// Open files and their bytes. `read` and `write` change memory only: sizes and times reach
/// the index through the writer when the handle is flushed or closed.
extension CacheEngine {
    /// The corresponding FUSE operation is `OPEN`. Opening to read is an access.
    public func open(_ id: EntryID, flags: Int32) throws -> UInt64 {
        let accessMode = flags & O_ACCMODE
        let writable = accessMode != O_RDONLY
        // Removed by a user since the kernel's lookup, the file still opens (as on ext4) while
        // the kernel holds it; removed by cachefs, the kernel looks the name up again.
        let current = try namespace.withLock { namespace -> EntryRecord in
            guard let inode = try namespace.inode(id), inode.record.parent != nil || inode.keptUntilUnreferenced
            else { throw CacheError.stale }
            return inode.record
        }
        guard current.kind == .file else { throw CacheError.isDirectory }
        if current.parent != nil && isExpired(current, at: now) {
            removeFiles([current], as: .expired, reason: "expired; found at open", qualifies: isExpired)
            throw CacheError.stale
        }
        // A file of an origin pool not fetched yet: the first open starts the one fetch.
        let fetch = try joinFetch(id)
        // Writes stay local, to a file whose origin bytes are all there.
        if writable, let fetch { try fetch.waitForCompletion() }
        if writable { try markWriting(id) }
        let fd: Int32
        do {
            fd = try disk.open(layout.objectPath(for: id), flags: writable ? O_RDWR : O_RDONLY, mode: 0)
        } catch {
            if writable { finishWriting(id) }
            // Removed by cachefs (and, being closed, its bytes unlinked) since the record was read.
            if case .io(ENOENT) = error { throw CacheError.stale }
            throw error
        }
        // Counted open under the namespace lock, so a removal sees either a closed file
        // (and discards it) or an open one (and keeps its bytes for this handle).
        let time = now.nanoseconds
        let (opened, movedAccessTime) = namespace.withLock { namespace -> (EntryRecord?, Bool) in
            var movedAccessTime = false
            let opened = namespace.modify(id) { inode -> EntryRecord? in
                guard inode.record.parent != nil || inode.keptUntilUnreferenced else { return nil }
                inode.openHandles += 1
                if writable { inode.writers += 1 }
                if accessMode != O_WRONLY && inode.record.atimeIsDue(at: time) {
                    inode.record.atime = time
                    movedAccessTime = true
                }
                return inode.record
            } ?? nil
            if movedAccessTime, let opened, opened.parent != nil { namespace.log(.content(opened)) }
            return (opened, movedAccessTime)
        }
        guard let opened else {
            disk.close(fd)
            if writable { finishWriting(id) }
            throw CacheError.stale
        }
        // The kernel serves stat from its cached attributes: a read from its page cache
        // never reaches the daemon, so it is told the atime moved, before the open returns
        // (a `stat` right after the read shows it, as on ext4). The notification is sent by
        // the notification thread, not here: it invalidates attributes only, which takes no
        // lock the kernel holds during OPEN, and the wait is bounded (see there).
        if movedAccessTime { notifications.invalidateAttributes(of: id, waitingAtMost: Tunables.attributeInvalidationWaitSeconds) }
        let handle = handles.add(OpenFile(entry: id, fd: fd, writable: writable, pool: opened.pool,
                                          sizeLimit: sizeLimit(for: opened), fetch: writable ? nil : fetch),
                                 writeOnly: accessMode == O_WRONLY)
        if writable && flags & O_TRUNC != 0 {
            do {
                try truncateAtOpen(id, fd: fd)
            } catch {
                release(handle)
                throw error
            }
        }
        if accessMode != O_WRONLY {
            recordAccess(id)
            // The open that starts a fetch is the miss's, not a hit.
            // So is the first open of a file stored with its lookup.
            if fetch == nil || fetch?.snapshot.outcome == .complete, !fetches.takeStoredWithLookup(id) {
                countHit(pool: opened.pool)
                if opened.parent != nil && !opened.persistent {
                    evictor.replacement.accessed(id, fingerprint: fingerprint(of: opened), size: opened.size, pool: opened.pool)
                }
            }
        }
        return handle
    }

    /// Whether an open handle's reads and writes should go past the kernel's page cache
    /// (chosen when it was opened; see `HandleTable.add`).
    public func bypassesPageCache(_ handle: UInt64) -> Bool {
        // An unknown handle fails at its first read or write; here it only picks the page-cache mode.
        (try? handles.get(handle))?.bypassesPageCache ?? false
    }

    /// libfuse asks the kernel for atomic O_TRUNC, so OPEN itself must empty the file.
    private func truncateAtOpen(_ id: EntryID, fd: Int32) throws {
        try namespace.withLock { namespace in
            try disk.ftruncate(fd, length: 0)
            let time = now.nanoseconds
            let (before, after) = try update(id, in: &namespace) { record in
                record.size = 0
                record.blocks = 0
                record.mtime = time
                record.ctime = time
                record.durable = false
            }
            if after.parent != nil {
                usage.addBytes(-before.size, pool: after.pool, persistent: after.persistent)
            }
        }
    }

    /// The descriptor of an open handle's bytes, for a zero-copy reply; counts as an access
    /// unless `isAccess` is false (the kernel filling a page for a write).
    /// A file still being fetched answers once the bytes before `offset + size` are stored.
    public func readDescriptor(_ handle: UInt64, offset: Int64, size: Int, isAccess: Bool = true) throws -> Int32 {
        let file = try handles.get(handle)
        if let fetch = file.fetch { try fetch.waitForBytes(before: offset + Int64(size)) }
        if isAccess { recordAccess(file.entry) }
        return file.fd
    }

    /// The corresponding FUSE operation is `READ` (copying form, used by tests and tools).
    public func read(_ handle: UInt64, offset: Int64, size: Int) throws -> [UInt8] {
        let fd = try readDescriptor(handle, offset: offset, size: size)
        var bytes = [UInt8](repeating: 0, count: size)
        let count = try bytes.withUnsafeMutableBytes { buffer throws(CacheError) in
            try disk.pread(fd, into: buffer, at: offset)
        }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// The corresponding FUSE operation is `WRITE`. A cached file that would outgrow its
    /// pool is refused with EFBIG and removed; on a full disk it evicts and retries while that
    /// frees something (`freeingSpace`); crossing a pool's limit wakes the evictor.
    ///
    /// With `clearingSetID` (a writer without CAP_FSETID, whose write the kernel did not pass
    /// through its page cache) the write drops the file's set-user-ID bit, and its
    /// set-group-ID bit when group execute is set, as the kernel does for a local file.
    public func write(_ handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer,
                      clearingSetID: Bool = false) throws -> Int {
        let file = try handles.get(handle)
        guard file.writable else { throw CacheError.badHandle }
        if let limit = file.sizeLimit, offset + Int64(bytes.count) > limit {
            // A file already gone needs no refusal: the write still answers EFBIG below.
            if let current = try? record(file.entry) {
                removeFiles([current], as: .refused, reason: "a cached file larger than its pool's max_size \(limit)")
            }
            throw CacheError.fileTooLarge
        }
        // A write through a descriptor whose close already finished the file marks it again.
        if namespace.withLock({ $0.inodes[file.entry].map { !$0.record.writing } ?? false }) {
            try markWriting(file.entry)
        }
        let written = try freeingSpace(extra: Int64(bytes.count)) { () throws(CacheError) in
            try disk.pwrite(file.fd, from: bytes, at: offset)
        }
        evictor.noteBytesWritten(written)
        noteContentChanged(file, growingTo: offset + Int64(written), clearingSetID: clearingSetID)
        return written
    }

    /// A write or fallocate changed a file's bytes: its times, its allocation and (if it grew)
    /// its size move. The growth is counted in the same hold of the namespace that changes
    /// the size, so a flag change or a removal between the two can never count it in the
    /// wrong place; crossing the pool's limit wakes the evictor.
    func noteContentChanged(_ file: OpenFile, growingTo end: Int64?, clearingSetID: Bool = false) {
        let time = now.nanoseconds
        // `st_blocks` keeps its last value when fstat fails; size and usage do not depend on it.
        let blocks = try? disk.allocatedBlocks(file.fd)
        var clearedSetID = false
        let countedAsCached = namespace.withLock { namespace in
            let counted = namespace.modify(file.entry) { inode -> Bool in
                if clearingSetID { clearedSetID = inode.record.clearSetID() }
                if let blocks { inode.record.blocks = blocks }
                inode.record.mtime = time
                inode.record.ctime = time
                inode.record.durable = false
                let growth = max((end ?? 0) - inode.record.size, 0)
                inode.record.size += growth
                guard growth > 0 else { return false }
                guard inode.record.parent != nil else {
                    usage.addPending(growth, pool: file.pool)
                    return false
                }
                usage.addBytes(growth, pool: file.pool, persistent: inode.record.persistent)
                return !inode.record.persistent
            } ?? false
            // The inode of an open handle is in memory: no I/O, nothing to fail.
            if clearedSetID, let record = try? namespace.inode(file.entry)?.record, record.parent != nil {
                namespace.log(.update(record))
            }
            return counted
        }
        // The kernel keeps the mode it was told; it learns the new one at its next GETATTR.
        if clearedSetID { notifications.invalidateAttributes(of: file.entry, waitingAtMost: 0) }
        if countedAsCached && isOverLimit(file.pool) { evictor.requestEnforcement(of: [file.pool]) }
    }

    /// On ENOSPC, evicts cached files of any pool and tries again, up to
    /// `Tunables.enospcRetries` times while evicting frees something: the caller sees ENOSPC
    /// when nothing is evictable (all pinned, persistent or open) or after those tries.
    func freeingSpace<T>(extra: Int64, _ operation: () throws(CacheError) -> T) throws(CacheError) -> T {
        var attempts = 0
        while true {
            let result = Result { () throws(CacheError) in try operation() }
            guard case .failure(let error) = result, error == .io(ENOSPC) else { return try result.get() }
            attempts += 1
            let outcome = evictor.relievePressure(extra: extra, in: self)
            guard attempts <= Tunables.enospcRetries, outcome == .enoughSpace || outcome == .stillShort else {
                throw error
            }
        }
    }

    func isOverLimit(_ pool: EntryID) -> Bool {
        guard let policy = policies.withLock({ $0[pool] }) else { return false }
        let current = usage.usage(of: pool)
        return (policy.maxSize > 0 && current.cachedBytes > policy.maxSize)
            || (policy.maxFiles > 0 && current.cachedFiles > policy.maxFiles)
    }

    /// The corresponding FUSE operation is `FLUSH` (each close of a descriptor): the size
    /// and times written so far go to the index writer. When this handle is the file's only
    /// writer, the close finishes the write in the same change: a file is complete once
    /// close() returns and its commit window has passed, not when the asynchronous RELEASE
    /// arrives. (A later write through a duplicate descriptor marks it again.) With
    /// `finishesWrite` false (the kernel's writeback cache, where a duplicate descriptor's
    /// later `write()`s reach the daemon only at write-back) the mark stays until `release`.
    public func flush(_ handle: UInt64, finishesWrite: Bool = true) throws {
        let file = try handles.get(handle)
        guard file.writable else { return }
        namespace.withLock { namespace in
            let current = namespace.modify(file.entry) { inode -> EntryRecord in
                if finishesWrite && inode.writers <= 1 { inode.record.writing = false }
                return inode.record
            }
            if let current, current.parent != nil { namespace.log(.content(current)) }
        }
        if finishesWrite { enforceLimitsAfterWrite(in: file.pool) }
    }

    /// The corresponding FUSE operation is `FSYNC`: returns once the bytes and every index
    /// record about the file are on the disk.
    public func fsync(_ handle: UInt64, dataOnly: Bool) throws {
        let file = try handles.get(handle)
        try disk.fsync(file.fd, dataOnly: dataOnly)
        if spares.takeUnsyncedRename(of: file.entry) {
            try syncFolder(layout.objectDirectory(for: file.entry))
        }
        namespace.withLock { namespace in
            let current = namespace.modify(file.entry) { inode -> EntryRecord in
                inode.record.durable = true
                return inode.record
            }
            if let current, current.parent != nil { namespace.log(.content(current)) }
        }
        writer.flush(durable: true)
    }

    /// The corresponding FUSE operation is `FSYNCDIR`: the names in the directory (and
    /// everything committed before them) are on the disk.
    public func fsyncDirectory(_ id: EntryID) throws {
        _ = try record(id)
        writer.flush(durable: true)
    }

    /// Waits until every change made so far is committed to the index, and the bytes of
    /// files removed before are gone (the `ByteRemover` removes them after the commit).
    public func waitForIndex() {
        writer.flush()
        remover.waitUntilIdle()
        writer.flush()
    }

    /// The corresponding FUSE operation is `RELEASE`: the last close of a handle. A file
    /// whose name was removed while open loses its bytes when its last handle goes.
    public func release(_ handle: UInt64) {
        guard let file = handles.remove(handle) else { return }
        disk.close(file.fd)
        // Under the namespace lock: a removal sees the file open or closed, never half-way.
        let discard = namespace.withLock { namespace -> EntryID? in
            let closed = namespace.modify(file.entry) { inode -> (record: EntryRecord, finished: Bool) in
                inode.openHandles -= 1
                if file.writable { inode.writers -= 1 }
                // The last writer's close finishes the write (usually its FLUSH did already).
                let finishes = file.writable && inode.writers == 0 && inode.record.writing
                if finishes { inode.record.writing = false }
                return (inode.record, finishes)
            }
            guard let closed else { return nil }
            if closed.finished && closed.record.parent != nil { namespace.log(.content(closed.record)) }
            return finishIfUnreferenced(file.entry, in: &namespace)
        }
        if let discard { discardBytes(of: [discard]) }
        if file.writable { enforceLimitsAfterWrite(in: file.pool) }
    }

    /// Records a read in `AccessTracker` only: no namespace lock on the read path. The
    /// evictor's thread moves the times into the inodes and the index (`flushAccessTimes`).
    func recordAccess(_ id: EntryID) {
        access.touch(id, at: now.nanoseconds)
    }

    /// Marks a file as being written and waits for that mark to commit before any byte
    /// changes, so a crash mid-write is recognised at the next mount.
    func markWriting(_ id: EntryID) throws {
        let marked = try namespace.withLock { namespace -> Bool in
            guard let inode = try namespace.inode(id) else { throw CacheError.notFound }
            guard inode.record.kind == .file, !inode.record.writing else { return false }
            let record = namespace.modify(id) { inode -> EntryRecord in
                inode.record.writing = true
                inode.record.durable = false
                return inode.record
            }!
            if record.parent != nil { namespace.log(.content(record)) }
            return true
        }
        if marked { writer.flush() }
    }

    /// Clears the mark set by `markWriting` when no handle writes the file any more.
    func finishWriting(_ id: EntryID) {
        namespace.withLock { namespace in
            let finished = namespace.modify(id) { inode -> EntryRecord? in
                guard inode.writers == 0, inode.record.writing else { return nil }
                inode.record.writing = false
                return inode.record
            } ?? nil
            if let finished, finished.parent != nil { namespace.log(.content(finished)) }
        }
    }
}
