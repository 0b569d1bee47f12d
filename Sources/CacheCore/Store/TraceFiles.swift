import CacheModel
import Logging
import Synchronization

/// The pools' access traces in `STORE/traces/POOL.csv`, each rotated at
/// `Tunables.traceFileBytes` (one old file kept), opened at a pool's first recorded access.
/// Written by the evictor's thread only.
final class TraceFiles: Sendable {
    private let layout: StoreLayout
    private let disk: any Disk
    private let logger: Logger
    private let files = Mutex<[EntryID: RotatingFile]>([:])

    init(layout: StoreLayout, disk: any Disk, logger: Logger) {
        self.layout = layout
        self.disk = disk
        self.logger = logger
    }

    func append(_ lines: [UInt8], droppedLines: Int, of pool: EntryID, named name: String) {
        if droppedLines > 0 {
            logger.warning("pool \(name): \(droppedLines) accesses not recorded in its trace (more than a second's worth)")
        }
        let file = files.withLock { files -> RotatingFile in
            if let file = files[pool] { return file }
            do throws(CacheError) {
                try disk.mkdir(layout.tracesPath, mode: 0o700)
            } catch {
                logger.error("could not make \(layout.tracesPath): \(error)")
            }
            let file = RotatingFile(path: layout.tracePath(ofPool: name), maxBytes: Tunables.traceFileBytes, disk: disk,
                                    logger: logger)
            files[pool] = file
            return file
        }
        file.append(lines)
    }
}
