import CacheModel
import Synchronization

/// One open file: the stored bytes' descriptor for the life of the handle (never one per
/// inode, so `ls -l` of a huge directory cannot run out of descriptors).
public struct OpenFile: Sendable {
    public var entry: EntryID
    public var fd: Int32
    public var writable: Bool
    public var pool: EntryID
    /// Persistent files may outgrow the pool's max_size; cached ones may not.
    public var sizeLimit: Int64?
    /// The fetch from the pool's origin that was storing the bytes when the file was
    /// opened: reads wait on it for their range.
    var fetch: FetchProgress?
    /// The blocks of a file held in blocks: reads fetch what they lack (``ReadThrough/withBlocks``).
    var blocks: BlockedFile?
    /// Reads and writes go past the kernel's page cache (FUSE's `direct_io`); see
    /// ``HandleTable/add(_:writeOnly:)``.
    public var bypassesPageCache = false
    /// `fd` is shared with the file's other readers and kept (``KeptDescriptors``).
    var keptDescriptor = false
}

/// Open handles by FUSE file handle number. Guarded by its own mutex, held only briefly.
final class HandleTable: Sendable {
    /// A file's open handles, by how they use the kernel's page cache.
    private struct PageCacheUse {
        var cachedHandles = 0
        var writersBypassing = 0
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
        var pageCacheUse: [EntryID: PageCacheUse] = [:]
    }
    private let state = Mutex(State())

    /// Adds a handle and chooses whether it bypasses the kernel's page cache.
    ///
    /// A handle opened only to write bypasses it when no open handle of the file uses it:
    /// each `write()` is then one WRITE, where a cached write costs the kernel's GETXATTR
    /// of `security.capability` first and a copy into the FUSE page cache. While such a
    /// writer is open, every other handle of the file bypasses it too, so that no page is
    /// cached that a later write would make stale; a handle that used the cache before keeps
    /// the next writer on it.
    func add(_ file: OpenFile, writeOnly: Bool = false) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            var file = file
            var use = state.pageCacheUse[file.entry, default: PageCacheUse()]
            file.bypassesPageCache = use.writersBypassing > 0 || (writeOnly && use.cachedHandles == 0)
            if !file.bypassesPageCache {
                use.cachedHandles += 1
            } else if file.writable {
                use.writersBypassing += 1
            }
            state.pageCacheUse[file.entry] = use
            state.files[handle] = file
            return handle
        }
    }

    func get(_ handle: UInt64) throws(CacheError) -> OpenFile {
        guard let file = state.withLock({ $0.files[handle] }) else { throw .badHandle }
        return file
    }

    /// How many handles are open.
    var count: Int { state.withLock { $0.files.count } }

    /// The files of `pool` that some handle has open for writing.
    func entriesOpenForWriting(in pool: EntryID) -> Set<EntryID> {
        state.withLock { state in
            Set(state.files.values.filter { $0.writable && $0.pool == pool }.map(\.entry))
        }
    }

    func remove(_ handle: UInt64) -> OpenFile? {
        state.withLock { state in
            guard let file = state.files.removeValue(forKey: handle) else { return nil }
            var use = state.pageCacheUse[file.entry, default: PageCacheUse()]
            if !file.bypassesPageCache {
                use.cachedHandles -= 1
            } else if file.writable {
                use.writersBypassing -= 1
            }
            state.pageCacheUse[file.entry] = use.cachedHandles == 0 && use.writersBypassing == 0 ? nil : use
            return file
        }
    }

    func removeAll() -> [OpenFile] {
        state.withLock { state in
            let files = Array(state.files.values)
            state.files.removeAll()
            state.pageCacheUse.removeAll()
            return files
        }
    }

    func updateLimit(for entry: EntryID, _ limit: Int64?) {
        state.withLock { state in
            for (handle, file) in state.files where file.entry == entry {
                state.files[handle]?.sizeLimit = limit
            }
        }
    }
}
