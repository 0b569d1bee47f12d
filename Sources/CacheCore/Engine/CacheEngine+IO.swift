import Glibc

/// Open files and their bytes. `read` and `write` take no namespace lock and never write
/// to the index: sizes and times live in memory until the handle is flushed or closed.
extension CacheEngine {
    /// The corresponding FUSE operation is `OPEN`. Opening to read is an access.
    public func open(_ id: EntryID, flags: Int32) throws -> UInt64 {
        let accessMode = flags & O_ACCMODE
        let writable = accessMode != O_RDONLY
        let current: EntryRecord
        do {
            current = try record(id)
        } catch CacheError.notFound {
            // Evicted between the kernel's lookup and this open: let the kernel look again.
            throw CacheError.stale
        }
        guard current.kind == .file else { throw CacheError.isDirectory }
        guard current.parent != nil else { throw CacheError.stale }
        if isExpired(current, at: now) {
            removeFiles([current], as: .expired, reason: "expired; found at open", qualifies: isExpired)
            throw CacheError.stale
        }
        if writable {
            try beginWriting(current)
        }
        let fd: Int32
        do {
            fd = try disk.open(layout.objectPath(for: id), flags: writable ? O_RDWR : O_RDONLY, mode: 0)
        } catch {
            if writable { finishWriting(id) }
            // Removed (and, being closed, its bytes unlinked) since the record was read.
            if case .io(ENOENT) = error { throw CacheError.stale }
            throw error
        }
        // Counted open under the namespace lock, so a removal sees either a closed file
        // (and deletes it) or an open one (and keeps its bytes for this handle).
        let opened: EntryRecord? = namespaceLock.withLock { _ in
            guard let latest = try? record(id), latest.parent != nil else { return nil }
            return nodes.open(latest, writable: writable)
        }
        guard let opened else {
            disk.close(fd)
            if writable { finishWriting(id) }
            throw CacheError.stale
        }
        if writable && flags & O_TRUNC != 0 {
            do {
                try truncateAtOpen(id, fd: fd)
            } catch {
                disk.close(fd)
                _ = nodes.close(id, writable: true)
                finishWriting(id)
                throw error
            }
        }
        if accessMode != O_WRONLY { recordAccess(id) }
        return handles.add(OpenFile(entry: id, fd: fd, writable: writable, pool: opened.pool,
                                    sizeLimit: sizeLimit(for: opened)))
    }

    /// libfuse asks the kernel for atomic O_TRUNC, so OPEN itself must empty the file.
    private func truncateAtOpen(_ id: EntryID, fd: Int32) throws {
        try namespaceLock.withLock { _ in
            try disk.ftruncate(fd, length: 0)
            let time = now.nanoseconds
            let (before, after) = try update(id) { record in
                record.size = 0
                record.mtime = time
                record.ctime = time
                record.durable = false
            }
            if after.parent != nil {
                usage.addBytes(-before.size, pool: after.pool, persistent: after.persistent)
            }
        }
    }

    /// The descriptor of an open handle's bytes, for a zero-copy reply; counts as an access.
    public func readDescriptor(_ handle: UInt64) throws -> Int32 {
        let file = try handles.get(handle)
        recordAccess(file.entry)
        return file.fd
    }

    /// The corresponding FUSE operation is `READ` (copying form, used by tests and tools).
    public func read(_ handle: UInt64, offset: Int64, size: Int) throws -> [UInt8] {
        let fd = try readDescriptor(handle)
        var bytes = [UInt8](repeating: 0, count: size)
        let count = try bytes.withUnsafeMutableBytes { buffer throws(CacheError) in
            try disk.pread(fd, into: buffer, at: offset)
        }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// The corresponding FUSE operation is `WRITE`. A cached file that would outgrow its
    /// pool is refused with EFBIG and removed; a full disk first frees cached space and
    /// retries once; crossing a pool's limit wakes the evictor.
    public func write(_ handle: UInt64, offset: Int64, bytes: UnsafeRawBufferPointer) throws -> Int {
        let file = try handles.get(handle)
        guard file.writable else { throw CacheError.badHandle }
        if let limit = file.sizeLimit, offset + Int64(bytes.count) > limit {
            if let current = nodes.record(file.entry) {
                removeFiles([current], as: .refused, reason: "a cached file larger than its pool's max_size \(limit)")
            }
            throw CacheError.fileTooLarge
        }
        if let current = nodes.record(file.entry), !current.writing {
            try beginWriting(current)
        }
        let written = try writeFreeingSpace(file.fd, bytes: bytes, offset: offset)
        noteBytesWritten(written)
        let end = offset + Int64(written)
        let time = now.nanoseconds
        // The growth is counted in the same hold of the node table that changes the size, so
        // a flag change or a removal between the two can never count it in the wrong place.
        let countedAsCached = nodes.modify(file.entry) { node -> Bool in
            let growth = max(end - node.record.size, 0)
            node.record.size += growth
            node.record.mtime = time
            node.record.ctime = time
            node.record.durable = false
            guard growth > 0 else { return false }
            guard node.record.parent != nil else {
                usage.addPending(growth, pool: file.pool)
                return false
            }
            usage.addBytes(growth, pool: file.pool, persistent: node.record.persistent)
            return !node.record.persistent
        } ?? false
        if countedAsCached && isOverLimit(file.pool) { requestEnforcement(of: [file.pool]) }
        return written
    }

    /// On ENOSPC, evicts cached files of any pool (least recently used first) and tries once more.
    private func writeFreeingSpace(_ fd: Int32, bytes: UnsafeRawBufferPointer, offset: Int64) throws(CacheError) -> Int {
        let firstTry = Result { () throws(CacheError) in try disk.pwrite(fd, from: bytes, at: offset) }
        guard case .failure(let error) = firstTry, error == .io(ENOSPC) else { return try firstTry.get() }
        relievePressure(extra: Int64(bytes.count))
        return try disk.pwrite(fd, from: bytes, at: offset)
    }

    /// Every few megabytes written, the evictor looks at free space at once.
    private func noteBytesWritten(_ count: Int) {
        let due = schedule.withLock { schedule in
            schedule.bytesSincePressureCheck += Int64(count)
            guard schedule.bytesSincePressureCheck >= 4 << 20 else { return false }
            schedule.bytesSincePressureCheck = 0
            schedule.pressureRequested = true
            return true
        }
        if due { worker.wake() }
    }

    func isOverLimit(_ pool: EntryID) -> Bool {
        guard let policy = policies.withLock({ $0[pool] }) else { return false }
        let current = usage.usage(of: pool)
        return (policy.maxSize > 0 && current.cachedBytes > policy.maxSize)
            || (policy.maxFiles > 0 && current.cachedFiles > policy.maxFiles)
    }

    /// The corresponding FUSE operation is `FLUSH` (each close of a descriptor): the size
    /// and times written so far reach the index.
    /// When this handle is the file's only writer, the close finishes the write in the same
    /// transaction: a file is complete once close() returns, not when the asynchronous
    /// RELEASE arrives. (A later write through a duplicate descriptor marks it again.)
    public func flush(_ handle: UInt64) throws {
        let file = try handles.get(handle)
        guard file.writable else { return }
        try namespaceLock.withLock { _ in
            let current = nodes.modify(file.entry) { node -> EntryRecord in
                if node.writers <= 1 { node.record.writing = false }
                return node.record
            }
            if let current, current.parent != nil {
                try index.updateContent(current)
            }
        }
    }

    /// The corresponding FUSE operation is `FSYNC`: the bytes and the index entry are durable.
    public func fsync(_ handle: UInt64, dataOnly: Bool) throws {
        let file = try handles.get(handle)
        try disk.fsync(file.fd, dataOnly: dataOnly)
        nodes.modify(file.entry) { $0.record.durable = true }
        try namespaceLock.withLock { _ in
            if let current = nodes.record(file.entry), current.parent != nil {
                try index.updateContent(current)
            }
        }
    }

    /// The corresponding FUSE operation is `RELEASE`: the last close of a handle. A file
    /// whose name was removed while open loses its bytes when its last handle goes.
    public func release(_ handle: UInt64) {
        guard let file = handles.remove(handle) else { return }
        disk.close(file.fd)
        // Under the namespace lock: a removal sees the file open or closed, never half-way.
        let closed = namespaceLock.withLock { _ -> Node? in
            guard let (node, _) = nodes.close(file.entry, writable: file.writable) else { return nil }
            if node.openHandles == 0 && node.record.parent == nil {
                if node.countedAsPending { usage.addPending(-node.record.size, pool: node.record.pool) }
                nodes.modify(file.entry) { $0.countedAsPending = false }
                do {
                    try index.delete(node.record.entryID)
                } catch {
                    logger.error("could not remove index entry \(node.record.entryID): \(error)")
                }
            }
            return node
        }
        guard let node = closed else { return }
        if file.writable && node.writers == 0 && node.record.parent != nil {
            finishWriting(file.entry, record: node.record)
        }
        if node.openHandles == 0 && node.record.parent == nil {
            unlinkBytes(of: [node.record.entryID])
        }
    }

    /// Records a read: in memory only; the maintenance thread writes it to the index.
    func recordAccess(_ id: EntryID) {
        let time = now.nanoseconds
        access.touch(id, at: time)
        nodes.modify(id) { $0.record.lastAccess = time }
    }

    /// Marks a file as being written in the index before any byte changes, so a crash
    /// mid-write is recognised at the next mount.
    private func beginWriting(_ current: EntryRecord) throws {
        guard !current.writing else { return }
        try namespaceLock.withLock { _ in
            try index.setWriting(current.entryID, true)
            nodes.modify(current.entryID) { node in
                node.record.writing = true
                node.record.durable = false
            }
        }
    }

    private func finishWriting(_ id: EntryID, record: EntryRecord? = nil) {
        namespaceLock.withLock { _ in
            if (nodes.node(id)?.writers ?? 0) > 0 { return }
            let finished = nodes.modify(id) { node -> (EntryRecord, Bool) in
                let wasWriting = node.record.writing
                node.record.writing = false
                return (node.record, wasWriting)
            }
            // Usually the last FLUSH has recorded the end of the write already.
            if let finished, !finished.1 { return }
            guard var current = finished?.0 ?? record else { return }
            current.writing = false
            guard current.parent != nil else { return }
            do {
                try index.updateContent(current)
            } catch {
                logger.error("could not record the end of a write to entry \(id): \(error)")
            }
        }
    }
}
