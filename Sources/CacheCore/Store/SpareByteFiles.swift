import CacheModel
import Foundation
import Glibc
import Synchronization

/// Empty byte files kept for reuse. A removed file's bytes are emptied and moved to
/// `STORE/spares/` instead of unlinked, and a new file takes one instead of allocating an
/// inode. Why: on an ext4 without a journal, allocating an inode skips every inode freed in
/// the last minutes, reading its table block to tell; after a burst of removals (an eviction
/// pass) one `open(O_CREAT)` of 1 KiB files cost 459 µs of kernel time against 30 µs to rename
/// a spare into place (10,000 files, measured on the store's disk), and the removals that feed
/// the spares free no inode that later creates would have to skip.
///
/// At most ``defaultCapacity`` wait; beyond that, bytes are unlinked as before. The folder is read
/// once at mount; after a power loss it is emptied instead (a spare's truncation may not have
/// reached the disk).
///
/// A rename is not made durable by `fsync` of the file on such an ext4 (a new name is, a
/// renamed one is not): files whose bytes came from a spare are remembered until a `syncfs`
/// covers them, and `fsync` of one syncs its folder too (``takeUnsyncedRename(of:)``).
public final class SpareByteFiles: Sendable {
    public static let defaultCapacity = Tunables.spareFiles

    private struct State {
        var names: [UInt64] = []
        var nextName: UInt64 = 0
        /// Names given out for bytes still being moved in.
        var arriving = 0
        var renamedSinceSync: Set<EntryID> = []
    }

    private let state: Mutex<State>
    private let capacity: Int
    private let layout: StoreLayout
    private let disk: any Disk

    /// Reads the spares left by the previous mount, or removes them all (`discard`).
    public init(layout: StoreLayout, disk: any Disk, discard: Bool,
                capacity: Int = SpareByteFiles.defaultCapacity) throws(CacheError) {
        self.capacity = capacity
        self.layout = layout
        self.disk = disk
        try disk.mkdir(layout.sparesPath, mode: 0o700)
        var kept: [UInt64] = []
        let listed = try disk.contentsOfDirectory(layout.sparesPath)
        for name in listed {
            guard !discard, let number = UInt64(name), kept.count < capacity else {
                // A spare that cannot be removed is only a file in spares/: the next mount tries again.
                try? disk.unlink(layout.sparesPath + "/" + name)
                continue
            }
            kept.append(number)
        }
        state = Mutex(State(names: kept, nextName: (kept.max() ?? 0) + 1))
    }

    public var count: Int { state.withLock { $0.names.count } }

    /// Opens a spare moved to `id`'s bytes, or nil when there is none (make the bytes anew).
    func take(for id: EntryID) -> Int32? {
        while let name = state.withLock({ $0.names.popLast() }) {
            let bytes = layout.objectPath(for: id)
            do throws(CacheError) {
                try disk.rename(path(of: name), to: bytes)
            } catch {
                continue  // gone from the folder (removed by hand): try the next one
            }
            // A spare that does not open is not used: a create makes new bytes instead.
            guard let fd = try? disk.open(bytes, flags: O_RDWR, mode: 0) else {
                // Best effort: a spare left behind is dropped at the next mount.
                try? disk.unlink(bytes)
                return nil
            }
            state.withLock { _ = $0.renamedSinceSync.insert(id) }
            return fd
        }
        return nil
    }

    /// Empties `id`'s bytes and moves them in; false when the folder is full or that failed
    /// (unlink them). Only for bytes no descriptor of the daemon still writes to.
    func keep(_ id: EntryID) -> Bool {
        let name = state.withLock { state -> UInt64? in
            state.renamedSinceSync.remove(id)
            guard state.names.count + state.arriving < capacity else { return nil }
            state.arriving += 1
            defer { state.nextName += 1 }
            return state.nextName
        }
        guard let name else { return false }
        let path = layout.objectPath(for: id)
        do throws(CacheError) {
            try empty(path)
            try disk.rename(path, to: self.path(of: name))
        } catch {
            state.withLock { $0.arriving -= 1 }
            return false
        }
        state.withLock { state in
            state.arriving -= 1
            state.names.append(name)
        }
        return true
    }

    /// Truncated through a descriptor closed at once: ext4 marks a file truncated to 0 to be
    /// written back at its next close (`auto_da_alloc`), and that close is better this one,
    /// with nothing to write, than the next file's, which would wait for its bytes' writeback
    /// (11% of the daemon's CPU over a run of creates, measured with perf).
    private func empty(_ path: String) throws(CacheError) {
        let fd = try disk.open(path, flags: O_WRONLY, mode: 0)
        defer { disk.close(fd) }
        try disk.ftruncate(fd, length: 0)
    }

    /// Whether `id`'s bytes came from a spare since the last `syncfs` began (and forgets it):
    /// then `fsync` of the file must sync its folder too.
    func takeUnsyncedRename(of id: EntryID) -> Bool {
        state.withLock { $0.renamedSinceSync.remove(id) != nil }
    }

    /// A `syncfs` starts: the renames made so far are durable once it returns (`syncDone`).
    func syncStarting() -> Set<EntryID> {
        state.withLock { $0.renamedSinceSync }
    }

    func syncDone(_ covered: Set<EntryID>) {
        state.withLock { $0.renamedSinceSync.subtract(covered) }
    }

    private func path(of name: UInt64) -> String {
        layout.sparesPath + "/" + String(name)
    }
}
