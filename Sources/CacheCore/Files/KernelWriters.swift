import CacheModel
import Synchronization

/// The writers of files the kernel opened by itself (`kernel_hits`): no OPEN tells the daemon
/// of them, so a file's first WRITE, FALLOCATE or CREATE opens one handle for the whole
/// inode, and its writes go through it until the file's close event or the kernel's FORGET
/// ends it. A request holds the handle while it uses it (``take(_:)``,
/// ``done(_:of:)``): one ended meanwhile is released by its last user, never under a write.
/// Guarded by its own mutex, a leaf.
final class KernelWriters: Sendable {
    private struct Writer {
        var handle: UInt64
        /// Requests using it now.
        var users: Int
    }

    private struct State {
        var byID: [EntryID: Writer] = [:]
        /// Writers ended while requests still used them: how many still do.
        var ending: [UInt64: Int] = [:]
    }

    private let state = Mutex(State())

    /// The handle writing `id`, if one does, held for the caller until ``done(_:of:)``.
    func take(_ id: EntryID) -> UInt64? {
        state.withLock { state in
            guard var writer = state.byID[id] else { return nil }
            writer.users += 1
            state.byID[id] = writer
            return writer.handle
        }
    }

    /// Adds `handle` as `id`'s writer, held for the caller; returns the handle that was there
    /// already (another request made one meanwhile), held instead, and then the caller
    /// releases its own.
    func add(_ handle: UInt64, for id: EntryID) -> UInt64? {
        state.withLock { state in
            if var existing = state.byID[id] {
                existing.users += 1
                state.byID[id] = existing
                return existing.handle
            }
            state.byID[id] = Writer(handle: handle, users: 1)
            return nil
        }
    }

    /// A request is done with `handle`; returns whether it was the last user of a writer
    /// ended meanwhile, which the caller then releases.
    func done(_ handle: UInt64, of id: EntryID) -> Bool {
        state.withLock { state in
            if var writer = state.byID[id], writer.handle == handle {
                writer.users -= 1
                state.byID[id] = writer
                return false
            }
            guard let users = state.ending[handle] else { return false }
            if users > 1 {
                state.ending[handle] = users - 1
                return false
            }
            state.ending[handle] = nil
            return true
        }
    }

    /// Ends `id`'s writer; returns its handle when no request uses it (the caller releases
    /// it), else its last user does.
    func end(_ id: EntryID) -> UInt64? {
        state.withLock { state in
            guard let writer = state.byID.removeValue(forKey: id) else { return nil }
            if writer.users == 0 { return writer.handle }
            state.ending[writer.handle] = writer.users
            return nil
        }
    }

    /// Every writer (at unmount, when no request runs any more).
    func endAll() -> [UInt64] {
        state.withLock { state in
            defer { state = State() }
            return state.byID.values.map(\.handle) + state.ending.keys
        }
    }

    var count: Int { state.withLock { $0.byID.count } }
}
