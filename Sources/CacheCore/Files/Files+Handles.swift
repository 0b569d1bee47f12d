import CacheModel
import CacheNames
import Glibc

/// Handles: create, open, flush, fsync and release.
extension Files {
    /// The corresponding FUSE operation is `CREATE`: a new file, opened.
    func create(parent: EntryID, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws -> CreatedFile {
        try Names.validate(name)
        // The bytes are created before the namespace lock is taken, so no request waits on
        // this I/O; should the daemon die before the row commits, they lie in the open id
        // range that recovery clears.
        let id = try names.takeID()
        let fd = try bytes.makeBytes(for: id)
        let created: EntryRecord
        do {
            created = try names.addCreatedFile(id, parent: parent, name: name, mode: mode, caller: caller)
        } catch {
            bytes.disk.close(fd)
            bytes.unlink([id])
            throw error
        }
        let handle = handles.add(OpenFile(entry: id, fd: fd, writable: true, pool: created.pool,
                                          sizeLimit: names.writeLimit(for: created)),
                                 writeOnly: flags & O_ACCMODE == O_WRONLY)
        return CreatedFile(attributes: created.attributes, handle: handle)
    }

    /// The corresponding FUSE operation is `MKNOD`: a regular file is made as by `create`
    /// and closed; anything else is a name and metadata only.
    func mknod(parent: EntryID, name: [UInt8], mode: UInt32, device: UInt64, caller: Caller) throws
        -> FileAttributes
    {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG), 0:
            let created = try create(parent: parent, name: name, mode: mode & 0o7777, flags: O_WRONLY, caller: caller)
            try flush(created.handle)
            release(created.handle)
            return try names.record(created.attributes.id).attributes
        default:
            return try names.makeSpecialFile(parent: parent, name: name, mode: mode, device: device, caller: caller)
        }
    }

    /// The corresponding FUSE operation is `OPEN`. Opening to read is an access.
    func open(_ id: EntryID, flags: Int32) throws -> UInt64 {
        let accessMode = flags & O_ACCMODE
        let writable = accessMode != O_RDONLY
        // Removed by a user since the kernel's lookup, the file still opens (as on ext4) while
        // the kernel holds it; removed by cachefs, the kernel looks the name up again.
        let current = try names.fileToOpen(id)
        guard current.kind == .file else { throw CacheError.isDirectory }
        if current.parent != nil && names.isExpired(current, at: names.now) {
            names.removeFiles([current], as: .expired, reason: "expired; found at open", qualifies: names.isExpired)
            throw CacheError.stale
        }
        // A fetched file past its pool's `revalidate` whose origin has another version: dropped,
        // and the kernel's new lookup finds the new one.
        if current.parent != nil, try !readThrough.isCurrent(current) {
            names.removeFiles([current], as: .changedAtOrigin, reason: "changed at the origin; found at open")
            throw CacheError.stale
        }
        // A file of an origin pool not fetched yet: the first open starts the one fetch, once
        // this open holds its handle (see `claimFetch`), or at once to wait for it.
        var fetch: FetchProgress?
        var startFetch: (@Sendable () -> Void)?
        var blocks: BlockedFile?
        switch try readThrough.claimFetch(id) {
        case nil: break
        case .whole(let progress, let start)?: (fetch, startFetch) = (progress, start)
        case .blocks(let file)?: blocks = file
        }
        defer { startFetch?() }
        // Writes stay local, to a file whose origin bytes are all there.
        if writable, let fetch {
            startFetch?()
            startFetch = nil
            try fetch.waitForCompletion()
        }
        if writable, let file = blocks {
            try readThrough.makeWhole(file)
            blocks = nil
        }
        let (fd, kept, opened, movedAccessTime) = try openCounted(id, writable: writable, reads: accessMode != O_WRONLY)
        // The kernel serves stat from its cached attributes: a read from its page cache
        // never reaches the daemon, so it is told the atime moved, before the open returns
        // (a `stat` right after the read shows it, as on ext4). The notification is sent by
        // the notification thread, not here: it invalidates attributes only, which takes no
        // lock the kernel holds during OPEN, and the wait is bounded (see there).
        if movedAccessTime {
            notifications.invalidateAttributes(of: id, waitingAtMost: Tunables.attributeInvalidationWaitSeconds)
        }
        let handle = handles.add(OpenFile(entry: id, fd: fd, writable: writable, pool: opened.pool,
                                          sizeLimit: writable ? names.writeLimit(for: opened) : nil,
                                          fetch: writable ? nil : fetch, blocks: blocks, keptDescriptor: kept),
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
            // A file held in blocks counts its misses by block (origin requests), not as hits.
            if blocks == nil, fetch == nil || fetch?.snapshot.outcome == .complete,
               !readThrough.fetches.takeFirstOpenIsMiss(id) {
                names.countHit(of: opened)
            }
        }
        return handle
    }

    /// A descriptor of `id`'s bytes, counted as an open handle's (an OPEN's, or the writer a
    /// write with no handle makes): a writable one marks the file writing first. The open is
    /// counted under the namespace lock, so a removal sees either a closed file (and discards
    /// it) or an open one (and keeps its bytes for this handle). ESTALE when cachefs removed the
    /// file since its record was read; a failure leaves nothing open or marked.
    func openCounted(_ id: EntryID, writable: Bool, reads: Bool) throws
        -> (fd: Int32, kept: Bool, opened: EntryRecord, movedAccessTime: Bool)
    {
        if writable { try markWriting(id) }
        let fd: Int32
        let kept: Bool
        do {
            (fd, kept) = writable ? (try bytes.open(id, writable: true), false) : try bytes.openToRead(id)
        } catch {
            if writable { finishWriting(id) }
            // Removed by cachefs (and, being closed, its bytes unlinked) since the record was read.
            if case .io(ENOENT) = error { throw CacheError.stale }
            throw error
        }
        let (opened, movedAccessTime) = names.countOpen(id, writable: writable, reads: reads, at: names.now.nanoseconds)
        guard let opened else {
            bytes.closeDescriptor(fd, of: id, kept: kept)
            if writable { finishWriting(id) }
            throw CacheError.stale
        }
        return (fd, kept, opened, movedAccessTime)
    }

    /// Whether an open handle's reads and writes should go past the kernel's page cache
    /// (chosen when it was opened; see `HandleTable.add`).
    func bypassesPageCache(_ handle: UInt64) -> Bool {
        // An unknown handle fails at its first read or write; here it only picks the page-cache mode.
        (try? handles.get(handle))?.bypassesPageCache ?? false
    }

    /// libfuse asks the kernel for atomic O_TRUNC, so OPEN itself must empty the file. The
    /// bytes go first, outside the namespace hold; the record follows.
    private func truncateAtOpen(_ id: EntryID, fd: Int32) throws {
        try bytes.disk.ftruncate(fd, length: 0)
        try names.truncatedAtOpen(id, at: names.now.nanoseconds)
    }

    /// The corresponding FUSE operation is `FLUSH` (each close of a descriptor): the size
    /// and times written so far go to the index writer. When this handle is the file's only
    /// writer, the close finishes the write in the same change: a file is complete once
    /// close() returns and its commit window has passed, not when the asynchronous RELEASE
    /// arrives. (A later write through a duplicate descriptor marks it again.) With
    /// `finishesWrite` false (the kernel's writeback cache, where a duplicate descriptor's
    /// later `write()`s reach the daemon only at write-back) the mark stays until `release`.
    func flush(_ handle: UInt64, finishesWrite: Bool = true) throws {
        let file = try handles.get(handle)
        guard file.writable else { return }
        let finished = names.flushWritten(file.entry, finishesWrite: finishesWrite)
        if finishesWrite { names.enforceLimitsIfOver(in: file.pool) }
        if let finished { readThrough.sharedTier.fileWritten(finished) }
    }

    /// The corresponding FUSE operation is `FSYNC`: returns once the bytes and every index
    /// record about the file are on the disk.
    func fsync(_ handle: UInt64, dataOnly: Bool) throws {
        let file = try handles.get(handle)
        try sync(file.fd, of: file.entry, dataOnly: dataOnly)
    }

    /// The bytes behind `fd`, the folder entry of bytes that were a spare, and the index.
    func sync(_ fd: Int32, of id: EntryID, dataOnly: Bool) throws {
        try bytes.disk.fsync(fd, dataOnly: dataOnly)
        if bytes.spares.takeUnsyncedRename(of: id) {
            try bytes.syncFolder(bytes.layout.objectDirectory(for: id))
        }
        names.markDurable(id)
        writer.flush(durable: true)
    }

    /// The corresponding FUSE operation is `RELEASE`: the last close of a handle. A file
    /// whose name was removed while open loses its bytes when its last handle goes.
    func release(_ handle: UInt64) {
        guard let file = handles.remove(handle) else { return }
        bytes.closeDescriptor(file.fd, of: file.entry, kept: file.keptDescriptor)
        // Under the namespace lock: a removal sees the file open or closed, never half-way.
        let finished = names.countClose(file.entry, writable: file.writable)
        if file.writable { names.enforceLimitsIfOver(in: file.pool) }
        if let finished { readThrough.sharedTier.fileWritten(finished) }
    }
}
