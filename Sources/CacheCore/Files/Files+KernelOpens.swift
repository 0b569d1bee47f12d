import CacheModel
import CacheNames
import Glibc

/// Files the kernel opens by itself (`kernel_hits`): OPEN, FLUSH and RELEASE never reach the
/// daemon, so every READ, WRITE, FSYNC and FALLOCATE comes with handle 0 and names only the
/// inode. A read borrows the file's kept descriptor; a write goes through the inode's one
/// writer (``KernelWriters``); what OPEN and RELEASE did moves to the first request that
/// needs it and to the kernel's close events (``kernelClosed(_:)``). A writer ends at the
/// file's close event (an `mmap` writer's pages are written before it: the kernel writes them
/// at the mapping's end, before the last reference goes), at FORGET, or at unmount.
extension Files {
    var servesOpensInKernel: Bool { names.kernelServesOpens.load(ordering: .relaxed) }

    /// From now on the kernel serves opens: removals keep bytes while the kernel holds an
    /// inode (``Names/kernelServesOpens``). Set at INIT, before any request.
    func serveOpensInKernel() {
        names.kernelServesOpens.store(true, ordering: .relaxed)
    }

    /// A READ with no handle. The first one of a file of an origin pool starts its fetch (as
    /// an OPEN did); reads of a file held in blocks fetch what they lack. A removed file the
    /// kernel still holds reads its kept bytes.
    func readDescriptor(ofFile id: EntryID, offset: Int64, size: Int) throws -> PinnedRead {
        recordAccess(id)
        let source = try readThrough.claimFetch(id)
        let fd: Int32, kept: Bool
        do {
            (fd, kept) = try bytes.openToRead(id)
        } catch {
            if case .whole(_, let start)? = source { start() }
            // Its bytes are gone: the kernel held no inode of it any more when they went.
            if case .io(ENOENT) = error { throw CacheError.stale }
            throw error
        }
        let borrowed = BorrowedDescriptor(bytes: bytes, entry: id, kept: kept)
        switch source {
        case nil:
            return PinnedRead(descriptor: fd, blocks: nil, pinned: 0..<0, borrowed: borrowed)
        case .whole(let progress, let start)?:
            start()
            do {
                try progress.waitForBytes(before: offset + Int64(size))
            } catch {
                borrowed.giveBack(fd)
                throw error
            }
            return PinnedRead(descriptor: fd, blocks: nil, pinned: 0..<0, borrowed: borrowed)
        case .blocks(let file)?:
            let pinned: Range<Int>
            do {
                pinned = try readThrough.pinBlocks(file, offset: offset, size: size)
            } catch {
                borrowed.giveBack(fd)
                throw error
            }
            return PinnedRead(descriptor: fd, blocks: file, pinned: pinned, borrowed: borrowed)
        }
    }

    /// A READ with no handle, copying (an encrypted store's).
    func read(ofFile id: EntryID, offset: Int64, size: Int) throws -> [UInt8] {
        let read = try readDescriptor(ofFile: id, offset: offset, size: size)
        return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count throws(CacheError) in
            count = try bytes.disk.pread(read.descriptor, into: UnsafeMutableRawBufferPointer(buffer), at: offset)
        }
    }

    /// Runs `body` with the handle writes of `id` go through: the inode's writer, made at
    /// its first write as an OPEN for writing made one (the whole file fetched first, the
    /// writing mark committed before any byte changes), and held while `body` runs.
    func withKernelWriter<T>(of id: EntryID, _ body: (UInt64) throws -> T) throws -> T {
        let handle = try takeKernelWriter(for: id)
        defer { if kernelWriters.done(handle, of: id) { release(handle) } }
        return try body(handle)
    }

    private func takeKernelWriter(for id: EntryID) throws -> UInt64 {
        if let handle = kernelWriters.take(id) { return handle }
        try readThrough.fetchWhole(id)
        let current = try names.fileToOpen(id)
        guard current.kind == .file else { throw CacheError.isDirectory }
        let (fd, _, opened, _) = try openCounted(id, writable: true, reads: false)
        let handle = handles.add(OpenFile(entry: id, fd: fd, writable: true, pool: opened.pool,
                                          sizeLimit: names.writeLimit(for: opened)))
        if let existing = kernelWriters.add(handle, for: id) {
            release(handle)
            return existing
        }
        return handle
    }

    /// A file CREATE made: its handle becomes the inode's writer, and the kernel is given
    /// handle 0 (it would never RELEASE another).
    func adoptCreated(_ created: CreatedFile) {
        let id = created.attributes.id
        let held = kernelWriters.add(created.handle, for: id) ?? created.handle
        if held != created.handle { release(created.handle) }
        if kernelWriters.done(held, of: id) { release(held) }
    }

    /// An FSYNC with no handle: through the inode's writer, or a descriptor opened for it.
    func fsync(ofFile id: EntryID, dataOnly: Bool) throws {
        if kernelWriters.count > 0, let handle = kernelWriters.take(id) {
            defer { if kernelWriters.done(handle, of: id) { release(handle) } }
            return try fsync(handle, dataOnly: dataOnly)
        }
        let fd = try bytes.open(id, writable: false)
        defer { bytes.disk.close(fd) }
        try sync(fd, of: id, dataOnly: dataOnly)
    }

    /// A writer's last use: its handle is released as RELEASE did (the write finishes, the
    /// pool's limits are enforced). A later write makes a new one.
    func endKernelWriter(_ id: EntryID) {
        if let handle = kernelWriters.end(id) { release(handle) }
    }

    /// The kernel forgot `id`: nothing has it open or can write it any more.
    func kernelForgot(_ id: EntryID) {
        guard kernelWriters.count > 0 || !kernelOpens.isEmpty, !names.isHeldByKernel(id) else { return }
        kernelOpens.forget(id)
        endKernelWriter(id)
    }

    /// Opens and closes the kernel reported: a writer's close ends the inode's writer, and so
    /// does the last close of a file a truncation started writing (``setattr``); a reader's is
    /// a hit, counted as OPEN counted one (the access, relatime's atime, the pool's hit
    /// counters and its policy), unless the file's bytes are still coming from its origin.
    func kernelClosed(_ batch: KernelCloseEvents.Batch) {
        guard servesOpensInKernel else { return }
        if batch.overflowed {
            // A writer whose close was lost stays marked until the kernel forgets its inode
            // or the mount ends: a crash meanwhile drops it as torn, never serves it whole.
            logger.warning("kernel_hits: the kernel's event queue overflowed: some hits were not counted")
            kernelOpens.removeAll()
        }
        let named = batch.opened + batch.writers + batch.readers
        let ids = names.entriesNamed(named.map { ($0.directory, $0.name) })
        let opened = ids[..<batch.opened.count].compactMap { $0 }
        let writers = ids[batch.opened.count..<(batch.opened.count + batch.writers.count)].compactMap { $0 }
        let readers = ids[(batch.opened.count + batch.writers.count)...].compactMap { $0 }
        for id in writers { endKernelWriter(id) }
        for id in kernelOpens.apply(opened: opened, closed: writers + readers) where kernelWriters.count > 0 {
            endKernelWriter(id)
        }
        let closes = names.noteReadersClosed(readers)
        for (record, kernelHoldsOldAtime) in closes {
            guard let record else { continue }
            let id = record.entryID
            if kernelHoldsOldAtime { notifications.invalidateAttributes(of: id, waitingAtMost: 0) }
            // The mark is taken either way: the close of the read that started a fetch may be
            // read while the fetch is still finishing.
            let wasTheMiss = readThrough.fetches.takeFirstOpenIsMiss(id)
            if !wasTheMiss, !readThrough.fetches.isUnfinished(id) { names.countHit(of: record) }
        }
    }

    /// Whether the kernel has `id` open, its events read up to now.
    func isOpenInKernel(_ id: EntryID) -> Bool {
        eviction.kernelCloses.catchUp()
        return kernelOpens.isOpen(id)
    }

    /// Before the daemon answers the first request made inside `directory` (a lookup, a
    /// create, a listing), the kernel's events there are watched: every file the kernel can
    /// open comes from such a request, so no hit is missed. A watch that cannot be placed
    /// (past `max_user_watches`) is logged once; that directory's hits are then not counted.
    func watchForHits(inside directory: EntryID) {
        guard servesOpensInKernel, let events = eviction.kernelCloses.events, !events.isWatching(directory),
              let path = names.pathBytes(of: directory) else { return }
        do {
            try events.watch(directory, path: path)
        } catch {
            if !unwatchedDirectoryReported.exchange(true, ordering: .relaxed) {
                let reason = String(cString: strerror(CacheError.errno(for: error)))
                logger.warning("kernel_hits: cannot watch directory \(String(decoding: path, as: UTF8.self)) for hits (\(reason); the limit is fs.inotify.max_user_watches): reads there are served but not counted as hits or accesses; this is said once")
            }
        }
    }
}
