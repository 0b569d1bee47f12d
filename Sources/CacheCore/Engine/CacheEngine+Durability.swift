import Foundation

/// Cached files closed but not yet synced are dropped after a power loss (they might be
/// torn). A thread of its own syncs the store's filesystem for them in batches, so a slow
/// sync never delays the evictor or a request.
extension CacheEngine {
    /// Syncs the store's filesystem once for a batch of closed files, then records them as
    /// durable: after a power loss, only durable cached files are kept.
    func makeClosedFilesDurable() {
        do {
            writer.flush()
            let batch = try index.notYetDurable(limit: Tunables.durableBatch)
            guard !batch.isEmpty else { return }
            let renamed = spares.syncStarting()
            try disk.syncFilesystem(layout.root)
            spares.syncDone(renamed)
            // In memory and through the writer in one hold, so a write that lands meanwhile
            // (and changes mtime) keeps the file not durable on both sides.
            namespace.withLock { namespace in
                var marked: [IndexChange] = []
                for file in batch {
                    let inMemory: Void? = namespace.modify(file.id) { inode in
                        guard inode.record.mtime == file.mtime, !inode.record.writing,
                              inode.record.parent != nil else { return }
                        inode.record.durable = true
                        marked.append(.content(inode.record))
                    }
                    // Not in memory: nothing can change it meanwhile, the row is the truth.
                    if inMemory == nil { marked.append(.markDurable(file.id, mtime: file.mtime)) }
                }
                namespace.log(marked)
            }
        } catch {
            logger.error("could not make closed files durable: \(error)")
        }
    }

    /// `fsync` of a folder of the store: its names are on the disk.
    func syncFolder(_ path: String) throws(CacheError) {
        let fd = try disk.open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { disk.close(fd) }
        try disk.fsync(fd, dataOnly: false)
    }
}
