import CacheModel
import Foundation

/// What the namespace learns when the kernel serves opens by itself (`kernel_hits`): a
/// reader's close, seen through the kernel's file events instead of an OPEN, and whether the
/// kernel still holds an inode.
extension Names {
    /// Readers closed `ids` (one read of the kernel's events): each atime moves when it is
    /// due (relatime), as an OPEN's would, all in one hold, and each counts as an access.
    /// Returns, in order, each record (nil for an entry gone from memory or not a named file)
    /// and whether the kernel must be told: the atime moved by relatime's day-old rule (moved
    /// because the file changed since its last read, it moved where the kernel holds no
    /// attributes: they were given it with no time to live, see
    /// `FileAttributes.attributesExpireIn`).
    package func noteReadersClosed(_ ids: [EntryID]) -> [(closed: EntryRecord?, kernelHoldsOldAtime: Bool)] {
        var reads: [(id: EntryID, time: Int64)] = []
        let closes = changeInMemory { namespace, _ in
            ids.map { id -> (closed: EntryRecord?, kernelHoldsOldAtime: Bool) in
                // Each its own time, as the events came: two files read within one batch
                // keep their order for LRU.
                let time = now.nanoseconds
                var moved = false, changedSinceRead = false
                let closed = namespace.modify(id) { inode -> EntryRecord? in
                    guard inode.hasName, inode.record.kind == .file else { return nil }
                    if inode.atimeIsDue(at: time) {
                        let record = inode.record
                        changedSinceRead = record.atime <= record.mtime || record.atime <= record.ctime
                        inode.setAccessTime(time)
                        moved = true
                    }
                    return inode.record
                } ?? nil
                if moved, let closed, closed.parent != nil { namespace.log(.content(closed)) }
                if closed != nil { reads.append((id, time)) }
                return (closed, moved && !changedSinceRead)
            }
        }
        access.touch(reads)
        return closes
    }

    /// Whether the kernel holds `id`'s inode (a lookup it has not forgotten).
    package func isHeldByKernel(_ id: EntryID) -> Bool {
        namespace.withLock { ($0.inodes[id]?.lookups ?? 0) > 0 }
    }

    /// Has the kernel drop the names of `pool`'s files it holds (a lookup not forgotten), so
    /// their next use looks them up again: a change of the pool's settings moved when they
    /// expire or are revalidated, which their entries' timeouts carry.
    ///
    /// The scan goes through every inode in memory, in bounded holds (a million inodes would
    /// hold the namespace for milliseconds at once); a compaction between two holds moves the
    /// inodes, and the scan then starts again (a name told twice costs nothing).
    package func kernelLooksUpAgain(inPool pool: EntryID) {
        var position = 0
        var compactions: Int?
        while true {
            let finished = changeInMemory { namespace, effects -> Bool in
                if compactions != namespace.inodes.compactions {
                    (position, compactions) = (0, namespace.inodes.compactions)
                }
                let end = position + Tunables.inodesScannedPerHold
                namespace.inodes.forEach(inPositions: position..<end) { inode in
                    guard inode.lookups > 0, !inode.isDirectory, inode.record.pool == pool else { return }
                    effects.notifications += Self.lookUpAgain(inode.names)
                }
                position = end
                return end >= namespace.inodes.positions
            }
            if finished { return }
            yieldBetweenHolds()
        }
    }

    /// The same for one file (a fetch told its origin's caching word).
    package func kernelLooksUpAgain(file id: EntryID) {
        changeInMemory { namespace, effects in
            guard let inode = namespace.inodes[id], inode.lookups > 0 else { return }
            effects.notifications += Self.lookUpAgain(inode.names)
        }
    }

    private static func lookUpAgain(_ names: [LinkName]) -> [PendingNotification] {
        names.map { .lookUpAgain(parent: $0.parent, name: Array($0.name)) }
    }

    /// The entries called so, each nil when memory does not have it (the kernel's events
    /// name files by directory and name), in one hold of the namespace.
    package func entriesNamed(_ files: [(directory: EntryID, name: [UInt8])]) -> [EntryID?] {
        guard !files.isEmpty else { return [] }
        return namespace.withLock { namespace in
            files.map { file in try? namespace.childID(of: file.directory, named: Data(file.name)) }
        }
    }

    /// The path of `directory` below the mount, as bytes ("data/photos"; empty for the root),
    /// or nil when it is not in memory.
    package func pathBytes(of directory: EntryID) -> [UInt8]? {
        namespace.withLock { namespace -> [UInt8]? in
            var components: [[UInt8]] = []
            var current = directory
            while current != WellKnownEntry.root {
                guard let record = try? namespace.record(current), let parent = record.parent,
                      components.count < 4096 else { return nil }
                components.append([UInt8](record.name))
                current = parent
            }
            return Array(components.reversed().joined(separator: [UInt8(ascii: "/")]))
        }
    }
}
