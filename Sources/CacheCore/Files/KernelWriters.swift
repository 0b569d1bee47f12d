import CacheModel
import Synchronization

/// The writers of files the kernel opened by itself (`kernel_hits`): no OPEN tells the daemon
/// of them, so a file's first WRITE, FALLOCATE or CREATE opens one handle for the whole
/// inode, and its writes go through it until the file's close event, the kernel's FORGET or
/// an idle time ends it (``Files/endKernelWriter(_:)``). Guarded by its own mutex, a leaf.
final class KernelWriters: Sendable {
    private struct Writer {
        var handle: UInt64
        /// When it last wrote (``ContinuousClock``), for the idle sweep.
        var lastUse: ContinuousClock.Instant
    }

    private let writers = Mutex<[EntryID: Writer]>([:])

    /// The handle writing `id`, if one does; the write about to go through it counts as use.
    func handle(of id: EntryID) -> UInt64? {
        writers.withLock { writers in
            guard var writer = writers[id] else { return nil }
            writer.lastUse = .now
            writers[id] = writer
            return writer.handle
        }
    }

    /// Adds `handle` as `id`'s writer; returns the handle that was there already (another
    /// request made one meanwhile), which the caller uses instead of its own.
    func add(_ handle: UInt64, for id: EntryID) -> UInt64? {
        writers.withLock { writers in
            if let existing = writers[id] { return existing.handle }
            writers[id] = Writer(handle: handle, lastUse: .now)
            return nil
        }
    }

    func remove(_ id: EntryID) -> UInt64? {
        writers.withLock { $0.removeValue(forKey: id)?.handle }
    }

    /// Takes the writers that wrote nothing for `seconds`.
    func removeIdle(for seconds: Double) -> [UInt64] {
        let cutoff = ContinuousClock.now - .milliseconds(Int64(seconds * 1000))
        return writers.withLock { writers in
            let idle = writers.filter { $0.value.lastUse < cutoff }
            for id in idle.keys { writers[id] = nil }
            return idle.values.map(\.handle)
        }
    }

    func removeAll() -> [UInt64] {
        writers.withLock { writers in
            defer { writers.removeAll() }
            return writers.values.map(\.handle)
        }
    }

    var count: Int { writers.withLock { $0.count } }
}
