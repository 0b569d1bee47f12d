import CacheModel
import CLinux
import Glibc

/// Reading and changing the bytes of open files: read, write, fallocate and truncate. The
/// I/O happens outside the namespace hold; the record's size, times and the pool's usage
/// change after it, in one hold.
extension Files {
    /// The descriptor of an open handle's bytes, for a zero-copy reply; counts as an access
    /// unless `isAccess` is false (the kernel filling a page for a write). A file still being
    /// fetched answers once the bytes before `offset + size` are stored; a file held in blocks
    /// once the blocks the read touches are held, and they stay held (pinned, never dropped)
    /// until the answer is done with, so the reply's splice never meets a hole.
    func readDescriptor(_ handle: UInt64, offset: Int64, size: Int, isAccess: Bool = true) throws -> PinnedRead {
        let file = try handles.get(handle)
        if isAccess { recordAccess(file.entry) }
        if let blocks = file.blocks {
            let pinned = try readThrough.pinBlocks(blocks, offset: offset, size: size)
            return PinnedRead(descriptor: file.fd, blocks: blocks, pinned: pinned)
        }
        if let fetch = file.fetch { try fetch.waitForBytes(before: offset + Int64(size)) }
        return PinnedRead(descriptor: file.fd, blocks: nil, pinned: 0..<0)
    }

    /// The corresponding FUSE operation is `READ` (copying form: an encrypted store's, and
    /// tests' and tools').
    func read(_ handle: UInt64, offset: Int64, size: Int, isAccess: Bool = true) throws -> [UInt8] {
        let file = try handles.get(handle)
        let copy = { [bytes] (fd: Int32) throws(CacheError) -> [UInt8] in
            // Not zero-filled first: pread fills what it returns, and only that is kept.
            try [UInt8](unsafeUninitializedCapacity: size) { buffer, count throws(CacheError) in
                count = try bytes.disk.pread(fd, into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            }
        }
        if isAccess { recordAccess(file.entry) }
        if let blocks = file.blocks {
            return try readThrough.withBlocks(blocks, offset: offset, size: size) { try copy(file.fd) }
        }
        if let fetch = file.fetch { try fetch.waitForBytes(before: offset + Int64(size)) }
        return try copy(file.fd)
    }

    /// The corresponding FUSE operation is `WRITE`. A cached file that would outgrow its
    /// pool is refused with EFBIG and removed; on a full disk it evicts and retries while that
    /// frees something (`freeingSpace`); crossing a pool's limit wakes the evictor.
    ///
    /// With `clearingSetID` (a writer without CAP_FSETID, whose write the kernel did not pass
    /// through its page cache) the write drops the file's set-user-ID bit, and its
    /// set-group-ID bit when group execute is set, as the kernel does for a local file.
    func write(_ handle: UInt64, offset: Int64, bytes data: UnsafeRawBufferPointer,
               clearingSetID: Bool = false) throws -> Int {
        let file = try handles.get(handle)
        guard file.writable else { throw CacheError.badHandle }
        if let limit = file.sizeLimit, offset + Int64(data.count) > limit {
            // The write answers EFBIG whatever happens to the refusal's removal.
            do {
                let current = try names.record(file.entry)
                names.removeFiles([current], as: .refused, reason: "a cached file (with the rest of its unit, if any) larger than its pool's max_size allows: \(limit) bytes")
            } catch CacheError.notFound {
                // Gone already: nothing to refuse.
            } catch {
                // It stays as it was (the refused bytes were never written); a later write
                // past the limit tries the removal again.
                logger.error("could not read entry \(file.entry) to remove it after refusing a write past its pool's max_size: \(error)")
            }
            throw CacheError.fileTooLarge
        }
        try markWritingAgainIfFinished(file.entry)
        let written = try eviction.freeingSpace(extra: Int64(data.count)) { () throws(CacheError) in
            try bytes.disk.pwrite(file.fd, from: data, at: offset)
        }
        evictor.noteBytesWritten(written)
        noteContentChanged(file, growingTo: offset + Int64(written), clearingSetID: clearingSetID)
        return written
    }

    /// The corresponding FUSE operation is `FALLOCATE`. Modes: 0 (allocate, growing the
    /// size), `FALLOC_FL_KEEP_SIZE` (allocate past the end), `FALLOC_FL_PUNCH_HOLE` (with
    /// KEEP_SIZE, as Linux requires) and `FALLOC_FL_ZERO_RANGE`. A cached file it would take
    /// past its pool's max_size gets EFBIG (nothing changes); a full disk frees cached space
    /// and retries, as a write does. A pool's usage counts the size, not the allocation.
    func fallocate(_ handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws {
        let file = try handles.get(handle)
        guard file.writable else { throw CacheError.badHandle }
        let supported = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE
        guard mode & ~supported == 0 else { throw CacheError.io(EOPNOTSUPP) }
        guard offset >= 0, length > 0 else { throw CacheError.io(EINVAL) }
        let keepsSize = mode & FALLOC_FL_KEEP_SIZE != 0
        let end = offset + length
        if !keepsSize, let limit = file.sizeLimit, end > limit { throw CacheError.fileTooLarge }
        try markWritingAgainIfFinished(file.entry)
        let allocates = mode & FALLOC_FL_PUNCH_HOLE == 0
        try eviction.freeingSpace(extra: allocates ? length : 0) { () throws(CacheError) in
            try bytes.disk.fallocate(file.fd, mode: mode, offset: offset, length: length)
        }
        // As on ext4, every mode moves ctime and mtime, even one that allocates nothing new.
        noteContentChanged(file, growingTo: keepsSize ? nil : end)
    }

    /// A write or fallocate changed a file's bytes: its times, its allocation and (if it grew)
    /// its size move. The growth is counted in the same hold of the namespace that changes
    /// the size, so a flag change or a removal between the two can never count it in the
    /// wrong place; crossing the pool's limit wakes the evictor.
    private func noteContentChanged(_ file: OpenFile, growingTo end: Int64?, clearingSetID: Bool = false) {
        let time = names.now.nanoseconds
        // `st_blocks` keeps its last value when fstat fails; size and usage do not depend on it.
        let blocks = try? bytes.disk.allocatedBlocks(file.fd)
        let (countedAsCached, clearedSetID) = names.noteWritten(file.entry, growingTo: end, clearingSetID: clearingSetID,
                                                                blocks: blocks, at: time)
        // The kernel keeps the mode it was told; it learns the new one at its next GETATTR.
        if clearedSetID { notifications.invalidateAttributes(of: file.entry, waitingAtMost: 0) }
        if countedAsCached { names.enforceLimitsIfOver(in: file.pool) }
    }

    /// The corresponding FUSE operation is `SETATTR`: chmod, chown, truncate and utimens.
    /// A truncation changes the bytes first, outside the namespace hold (the kernel holds
    /// the inode's lock across SETATTR, so no write to the file runs meanwhile), then the
    /// record and the pool's usage in one hold.
    ///
    /// With the kernel serving opens, a truncation of a file it has open (an `open(O_TRUNC)`'s:
    /// the kernel sends it after its open, with no handle) starts that open's write, as OPEN
    /// did: the writing mark stays until its close, so a crash before the first write drops
    /// the emptied file instead of keeping it as a whole one.
    func setattr(_ id: EntryID, changes: AttributeChanges, handle: UInt64?) throws -> FileAttributes {
        if let size = changes.size {
            // A truncation changes a complete file: one still being fetched completes first.
            try readThrough.fetchWhole(id)
            if servesOpensInKernel, isOpenInKernel(id) {
                return try withKernelWriter(of: id) { writer in
                    try truncate(id, to: size, handle: writer)
                    return try names.setAttributes(id, changes)
                }
            }
            try markWriting(id)
            defer { finishWriting(id) }
            try truncate(id, to: size, handle: handle)
            return try names.setAttributes(id, changes)
        }
        return try names.setAttributes(id, changes)
    }

    private func truncate(_ id: EntryID, to size: Int64, handle: UInt64?) throws {
        let current = try names.record(id)
        guard current.kind == .file else { throw CacheError.isDirectory }
        if size > current.size, let limit = names.writeLimit(for: current), size > limit {
            throw CacheError.fileTooLarge
        }
        // A handle already released (a racing close): truncate by path, as without one.
        if let handle, let file = try? handles.get(handle) {
            try bytes.disk.ftruncate(file.fd, length: size)
        } else {
            try bytes.disk.truncate(bytes.layout.objectPath(for: id), length: size)
        }
    }
}
