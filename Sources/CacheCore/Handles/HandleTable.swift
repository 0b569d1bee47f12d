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
}

/// Open handles by FUSE file handle number. Guarded by its own mutex, held only briefly.
final class HandleTable: Sendable {
    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
    }
    private let state = Mutex(State())

    func add(_ file: OpenFile) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
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
        state.withLock { $0.files.removeValue(forKey: handle) }
    }

    func removeAll() -> [OpenFile] {
        state.withLock { state in
            let files = Array(state.files.values)
            state.files.removeAll()
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
