import CacheModel
import CLinux
import Glibc
import Synchronization

/// The kernel's open and close events on the mount (inotify, one watch per directory the
/// kernel has entered), read in batches: how the daemon learns of the hits the kernel serves
/// by itself (`kernel_hits`), with no request per hit. A close of a descriptor opened to read
/// is a hit; a close of one opened to write ends the inode's writer; opens and closes together
/// tell which files the kernel has open (``KernelOpenCounts``).
///
/// Why inotify: its events carry the directory and the name, and no descriptor (fanotify's
/// events each hold a descriptor of the file, which makes an unmount at that moment fail with
/// EBUSY), and it needs no privilege. Opens are watched too: they tell an `open(O_TRUNC)`'s
/// truncation from a `truncate(2)`'s, and they keep the kernel from merging two closes of one
/// file in a row into one event (it merges an event identical to the last one queued). A directory is watched before the daemon answers the first request made
/// inside it (``isWatching(_:)``, ``watch(_:path:)``), so every file's close is seen. Events the
/// kernel could not queue (past `max_queued_events`, 16,384 by default) are lost: the batch
/// says so.
public final class KernelCloseEvents: Sendable {
    /// A file opened or closed: its directory and its name there.
    public struct NamedFile: Sendable, Equatable {
        public var directory: EntryID
        public var name: [UInt8]
    }

    /// What one read of the queue brought.
    public struct Batch: Sendable, Equatable {
        public var opened: [NamedFile] = []
        /// Closes of descriptors opened to read only, and of those opened to write.
        public var readers: [NamedFile] = []
        public var writers: [NamedFile] = []
        public var overflowed = false
    }

    private struct Watches {
        var directories: [Int32: EntryID] = [:]
        var watched: Set<EntryID> = []
    }

    private let instance: Int32
    private let mountpoint: [UInt8]
    /// Written once to end ``run(_:)``.
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)
    /// One reader at a time: the listener's thread, or an eviction pass or a figure read
    /// catching up (``drainPending(_:)``), so batches are delivered in the kernel's order.
    private let reading = Mutex(())
    private let watches = Mutex(Watches())

    public init(mountpoint: String) throws(CacheError) {
        let instance = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard instance >= 0 else { throw CacheError.io(errno) }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            let code = errno
            close(instance)
            throw CacheError.io(code)
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.instance = instance
        self.mountpoint = Array(mountpoint.utf8)
        stopPipe = (ends[0], ends[1])
    }

    deinit {
        close(instance)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    public func isWatching(_ directory: EntryID) -> Bool {
        watches.withLock { $0.watched.contains(directory) }
    }

    /// Watches `directory`, at `path` below the mount (empty for its root). Its path lookup
    /// goes through the mount: the kernel has every component in its caches while it works
    /// inside the directory, and a lookup it must revalidate is answered by another of the
    /// daemon's threads.
    public func watch(_ directory: EntryID, path: [UInt8]) throws(CacheError) {
        let full = path.isEmpty ? mountpoint : mountpoint + [UInt8(ascii: "/")] + path
        let mask = UInt32(IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ONLYDIR)
        let descriptor = (full + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { inotify_add_watch(instance, $0.baseAddress!, mask) }
        }
        guard descriptor >= 0 else { throw CacheError.io(errno) }
        watches.withLock { watches in
            watches.directories[descriptor] = directory
            watches.watched.insert(directory)
        }
    }

    /// Reads events until ``stop()``, handing each read's batch to `deliver`; after each
    /// wakeup, lets events gather for a moment first (``Tunables/kernelEventGatherMicroseconds``).
    public func run(_ deliver: (Batch) -> Void) {
        var waiting = [pollfd(fd: instance, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        while !stopped.load(ordering: .acquiring) {
            guard poll(&waiting, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if waiting[1].revents != 0 { return }
            usleep(Tunables.kernelEventGatherMicroseconds)
            drainPending(deliver)
        }
    }

    /// Reads every event queued so far, handing each read's batch to `deliver`.
    public func drainPending(_ deliver: (Batch) -> Void) {
        reading.withLock { _ in
            let capacity = Tunables.kernelEventBufferBytes
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let length = read(instance, buffer, capacity)
                guard length > 0 else {
                    if length < 0 && errno == EINTR { continue }
                    return
                }
                let events = Self.parse(UnsafeRawBufferPointer(start: buffer, count: length))
                deliver(batch(of: events))
            }
        }
    }

    /// Ends ``run(_:)`` (its events not read yet are dropped).
    public func stop() {
        stopped.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// One raw `struct inotify_event`: wd s32, mask u32, cookie u32, len u32, then `len` bytes
    /// of name, NUL-padded.
    struct Event: Equatable {
        var watch: Int32
        var mask: UInt32
        var name: [UInt8]
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        var events: [Event] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            guard offset + 16 + length <= bytes.count else { break }
            let name = bytes[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
            events.append(Event(watch: watch, mask: mask, name: Array(name)))
            offset += 16 + length
        }
        return events
    }

    /// The opens and closes of files among `events`, by directory; a watch the kernel ended
    /// (its directory removed) is forgotten.
    func batch(of events: [Event]) -> Batch {
        watches.withLock { watches in
            var batch = Batch()
            for event in events {
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { batch.overflowed = true }
                if event.mask & UInt32(IN_IGNORED) != 0, let directory = watches.directories.removeValue(forKey: event.watch) {
                    watches.watched.remove(directory)
                }
                guard event.mask & UInt32(IN_ISDIR) == 0, !event.name.isEmpty,
                      let directory = watches.directories[event.watch] else { continue }
                let file = NamedFile(directory: directory, name: event.name)
                if event.mask & UInt32(IN_OPEN) != 0 { batch.opened.append(file) }
                if event.mask & UInt32(IN_CLOSE_WRITE) != 0 { batch.writers.append(file) }
                if event.mask & UInt32(IN_CLOSE_NOWRITE) != 0 { batch.readers.append(file) }
            }
            return batch
        }
    }
}
