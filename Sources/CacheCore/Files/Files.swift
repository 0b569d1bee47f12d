import CacheModel
import CacheNames
import Foundation
import Logging
import Synchronization

/// The owner of open files: the handle table, the writing mark (a file being written is
/// marked in the index before its bytes change, so a crash mid-write is recognised at the
/// next mount) and the background sync that makes closed files durable. `read` and `write`
/// change memory only: sizes and times reach the index through the writer when the handle
/// is flushed or closed.
final class Files: Sendable {
    let handles: HandleTable
    /// Each inode's one writer when the kernel serves opens (`kernel_hits`).
    let kernelWriters = KernelWriters()
    /// The files the kernel has open when it serves opens, from its events.
    let kernelOpens = KernelOpenCounts()
    /// A directory could not be watched for hits (reported once).
    let unwatchedDirectoryReported = Atomic<Bool>(false)
    /// Syncs closed files and marks them durable (see `makeClosedFilesDurable`).
    let durability: BackgroundWorker

    let names: Names
    let bytes: ObjectFiles
    let readThrough: ReadThrough
    let eviction: EngineEvictionHost
    let index: IndexDatabase
    let writer: IndexWriter
    let evictor: Evictor
    let notifications: KernelNotifications
    let logger: Logger

    init(handles: HandleTable, durabilitySeconds: Double, names: Names, bytes: ObjectFiles, readThrough: ReadThrough,
         eviction: EngineEvictionHost, writer: IndexWriter, evictor: Evictor, notifications: KernelNotifications,
         logger: Logger) {
        self.handles = handles
        durability = BackgroundWorker(tick: durabilitySeconds, name: "cachefs-durable", roundAtStart: false)
        self.names = names
        self.bytes = bytes
        self.readThrough = readThrough
        self.eviction = eviction
        self.index = writer.index
        self.writer = writer
        self.evictor = evictor
        self.notifications = notifications
        self.logger = logger
    }

    func start() {
        durability.start { [weak self] in self?.makeClosedFilesDurable() }
    }

    /// Closes every descriptor still open (at unmount).
    func closeAll() {
        // No RELEASE ends them: their writes finish here, as a last close's would.
        for handle in kernelWriters.endAll() { release(handle) }
        for file in handles.removeAll() {
            bytes.closeDescriptor(file.fd, of: file.entry, kept: file.keptDescriptor)
        }
        bytes.kept.closeAll()
    }

    /// Cached files closed but not yet synced are dropped after a power loss (they might be
    /// torn). The durability thread syncs the store's filesystem once for a batch of them,
    /// then records them as durable, so a slow sync never delays the evictor or a request.
    func makeClosedFilesDurable() {
        do {
            writer.flush()
            let batch = try index.notYetDurable(limit: Tunables.durableBatch)
            guard !batch.isEmpty else { return }
            let renamed = bytes.spares.syncStarting()
            try bytes.disk.syncFilesystem(bytes.layout.root)
            bytes.spares.syncDone(renamed)
            names.markSynced(batch)
        } catch {
            logger.error("could not make closed files durable: \(error)")
        }
    }

    /// Records a read in the ``AccessTracker`` only: no namespace lock on the read path. The
    /// evictor's thread moves the times into the inodes and the index (`flushAccessTimes`).
    func recordAccess(_ id: EntryID) {
        names.noteAccess(id)
    }

    /// Marks a file as being written and waits for that mark to commit before any byte
    /// changes, so a crash mid-write is recognised at the next mount.
    func markWriting(_ id: EntryID) throws {
        if try names.markWriting(id) { writer.flush() }
    }

    /// A write through a descriptor whose close already finished the file marks it again.
    func markWritingAgainIfFinished(_ id: EntryID) throws {
        if names.isFinished(id) { try markWriting(id) }
    }

    /// Clears the mark set by `markWriting` when no handle writes the file any more. A file
    /// whose write ends (here, at a FLUSH or at the last writer's RELEASE) is offered to its
    /// pool's shared tier, which writes it behind if the pool has one.
    func finishWriting(_ id: EntryID) {
        if let finished = names.finishWriting(id) { readThrough.sharedTier.fileWritten(finished) }
    }
}
