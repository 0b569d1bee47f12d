import CacheModel
import CacheNames
import Foundation
import Glibc
import Logging

/// The owner of file bytes in the store's `objects/` folder: new bytes (a spare if one
/// waits), their removal once the index no longer names them, and the store filesystem's
/// figures. Every call is I/O and none is made inside the namespace hold.
final class ObjectFiles: Sendable {
    let layout: StoreLayout
    let disk: any Disk
    let spares: SpareByteFiles
    let remover: ByteRemover
    /// Read-only descriptors shared by a file's readers and kept between hits.
    let kept: KeptDescriptors
    private let writer: IndexWriter
    private let fetches: FetchTable
    private let access: AccessTracker
    private let logger: Logger

    init(layout: StoreLayout, disk: any Disk, spares: SpareByteFiles, writer: IndexWriter, fetches: FetchTable,
         access: AccessTracker, threads: BlockingPool, keptDescriptors: Int, logger: Logger) {
        remover = ByteRemover(threads: threads)
        kept = KeptDescriptors(capacity: keptDescriptors, disk: disk)
        self.layout = layout
        self.disk = disk
        self.spares = spares
        self.writer = writer
        self.fetches = fetches
        self.access = access
        self.logger = logger
    }

    func start() {
        remover.start { [weak self] ids in self?.removeBytesAndRows(of: ids) }
    }

    /// New, empty bytes for `id`, open for reading and writing: a spare if one waits.
    func makeBytes(for id: EntryID) throws(CacheError) -> Int32 {
        if let fd = spares.take(for: id) { return fd }
        return try openFreeingKept(layout.objectPath(for: id), flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
    }

    func open(_ id: EntryID, writable: Bool) throws(CacheError) -> Int32 {
        try openFreeingKept(layout.objectPath(for: id), flags: writable ? O_RDWR : O_RDONLY, mode: 0)
    }

    /// An open that meets the process's descriptor limit closes the unused kept descriptors
    /// and tries once more: kept ones never cost a request its descriptor.
    private func openFreeingKept(_ path: String, flags: Int32, mode: mode_t) throws(CacheError) -> Int32 {
        do {
            return try disk.open(path, flags: flags, mode: mode)
        } catch where error.errno == EMFILE {
            kept.closeUnused()
            return try disk.open(path, flags: flags, mode: mode)
        }
    }

    /// A descriptor to read `id`'s bytes, shared and kept when it can be (``KeptDescriptors``);
    /// given back with ``closeDescriptor(_:of:kept:)``.
    func openToRead(_ id: EntryID) throws(CacheError) -> (fd: Int32, kept: Bool) {
        try kept.acquire(id) { () throws(CacheError) -> Int32 in try open(id, writable: false) }
    }

    /// Gives back a descriptor from ``open(_:writable:)`` (`kept` false) or ``openToRead(_:)``.
    func closeDescriptor(_ fd: Int32, of id: EntryID, kept isKept: Bool) {
        kept.release(id, fd: fd, kept: isKept)
    }

    /// Deletes the bytes of entries whose names are gone, once the index has their rows
    /// nameless: a crash before the unlink leaves a nameless row, which recovery finishes,
    /// never bytes without a row. The rows go after the bytes. Ids are never reused.
    func discard(_ ids: [EntryID]) {
        guard !ids.isEmpty else { return }
        writer.enqueue([.afterCommit { [remover] in remover.enqueue(ids) }])
    }

    /// A batch of the `ByteRemover`: the bytes, then the rows.
    private func removeBytesAndRows(of ids: [EntryID]) {
        unlink(ids)
        writer.enqueue(ids.map { .delete($0) })
    }

    func unlink(_ ids: [EntryID]) {
        // No kept descriptor may outlive its bytes (it would read a spare's next file).
        kept.drop(ids)
        for id in ids {
            // A fetch in flight may still write through its own descriptor: such bytes are
            // unlinked, never handed to a new file.
            if !fetches.isUnfinished(id) && spares.keep(id) {
                access.forget(id)
                continue
            }
            do throws(CacheError) {
                try disk.unlink(layout.objectPath(for: id))
            } catch where error.errno != ENOENT {
                logger.error("could not remove bytes of entry \(id): \(error)")
            } catch {}
            access.forget(id)
        }
    }

    /// `fsync` of a folder of the store: its names are on the disk.
    func syncFolder(_ path: String) throws(CacheError) {
        let fd = try disk.open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { disk.close(fd) }
        try disk.fsync(fd, dataOnly: false)
    }

    /// Waits until the bytes of every batch handed to the remover so far are gone.
    func waitUntilRemoved() {
        remover.waitUntilIdle()
    }

    /// The store's own filesystem, as `statfs` answers for the root.
    func filesystemStats() throws(CacheError) -> FilesystemStats {
        let info = try disk.statvfs(layout.root)
        return FilesystemStats(
            blockSize: UInt64(info.f_bsize), fragmentSize: UInt64(info.f_frsize), blocks: UInt64(info.f_blocks),
            freeBlocks: UInt64(info.f_bfree), availableBlocks: UInt64(info.f_bavail), files: UInt64(info.f_files),
            freeFiles: UInt64(info.f_ffree), maxNameLength: 255)
    }
}
